//! Macro diagnostics: one failing file per error in `tests/ui/fail`, each with its expected `.stderr`; passing cases in
//! `tests/ui/pass`. Regenerate the expectations with `TRYBUILD=overwrite cargo test --test ui`.

#[test]
fn ui() {
    // trybuild builds its cases in a project of its own, which does not take this workspace's `[profile.dev]`: without
    // this, every dependency is built again with full debug info (3.4 GB of `target/tests` instead of under 1 GB). The
    // cargo that trybuild runs inherits this process's environment; this binary has this one test, so no other
    // thread reads the environment while it is set.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
