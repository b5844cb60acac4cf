//! Checks shared by the inputs' `validate` methods; each error names the offending field.

use std::collections::BTreeMap;

use crate::costs::ItemKind;

pub(crate) fn check_map(class: &str, which: &str, map: &BTreeMap<String, f64>) -> Result<(), String> {
    for (key, value) in map {
        if ItemKind::parse(key).is_none() {
            let known: Vec<&str> = ItemKind::ALL.iter().map(|k| k.key()).collect();
            return Err(format!("{class}.{which}: unknown item kind {key:?} (known: {})", known.join(", ")));
        }
        check_non_negative(&format!("{class}.{which}.{key}"), *value)?;
    }
    Ok(())
}

pub(crate) fn check_non_negative(name: &str, value: f64) -> Result<(), String> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number ≥ 0"))
    }
}

pub(crate) fn check_positive(name: &str, value: f64) -> Result<(), String> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number > 0"))
    }
}

pub(crate) fn check_share(name: &str, value: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(format!("{name} must be between 0 and 1"))
    }
}
