//! Macro diagnostics: one failing file per error in `tests/ui/fail`, each with its expected `.stderr`; passing cases in
//! `tests/ui/pass`. Regenerate the expectations with `TRYBUILD=overwrite cargo test --test ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
