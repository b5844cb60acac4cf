//! The checked-in OpenAPI document (`functions/api/openapi.json`) is the one the code generates
//! (`sundial_api::doc`): a change of the contract is a visible diff in review. After a deliberate
//! change, `SUNDIAL_BLESS=1 cargo test -p sundial-api --test golden` rewrites the copy.

use std::path::Path;

#[test]
fn the_checked_in_document_is_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let generated = sundial_api::doc::json();
    if std::env::var_os("SUNDIAL_BLESS").is_some() {
        std::fs::write(&path, generated).unwrap_or_else(|e| panic!("{e}"));
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != generated {
        let line = checked_in.lines().zip(generated.lines()).position(|(a, b)| a != b).map_or(0, |i| i + 1);
        panic!(
            "functions/api/openapi.json differs from the document the code generates (first at line {line}); \
             run `SUNDIAL_BLESS=1 cargo test -p sundial-api --test golden` and review the diff"
        );
    }
}
