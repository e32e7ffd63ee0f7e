//! `GET /__test/panic`: a deliberate panic, for the test that proves a
//! panicking request does not take the isolate's later requests down
//! (tests/panic-recovery.test.mjs). It exists only while the test-only var
//! `HOOKRELAY_TEST_FAULTS` holds `panic`; otherwise the path is a plain 404.

use worker::Env;

/// The path of the deliberate panic.
pub const PATH: &str = "/__test/panic";

/// True when the test-only fault switch asks for a panic.
pub fn armed(env: &Env) -> bool {
    hookrelay_platform::test_faults::armed(env, "panic")
}

/// Panics, the way a bug would: the wasm instance aborts mid-request.
pub fn handle() -> ! {
    panic!("deliberate panic from {PATH} (HOOKRELAY_TEST_FAULTS=panic)");
}
