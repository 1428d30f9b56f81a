//! Hostile test tool `slowcheck_a`: see guest-tools/test-support/slowcheck.rs.
const NAME: &str = "slowcheck_a";
include!("../../../test-support/slowcheck.rs");

hermetic_sdk::export_tool!(SlowCheck, "name = \"slowcheck_a\"\ntoolset = \"hostile\"\n");
