//! Hostile test tool `slowcheck_b`: see guest-tools/test-support/slowcheck.rs.
const NAME: &str = "slowcheck_b";
include!("../../../test-support/slowcheck.rs");

hermetic_sdk::export_tool!(SlowCheck, "name = \"slowcheck_b\"\ntoolset = \"hostile\"\n");
