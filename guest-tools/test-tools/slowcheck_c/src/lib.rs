//! Hostile test tool `slowcheck_c`: see guest-tools/test-support/slowcheck.rs.
const NAME: &str = "slowcheck_c";
include!("../../../test-support/slowcheck.rs");

hermetic_sdk::export_tool!(SlowCheck, "name = \"slowcheck_c\"\ntoolset = \"hostile\"\n");
