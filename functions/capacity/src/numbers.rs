//! Numbers for people: thousands separators, dollars and percentages.

/// A number for people: thousands separators from 100 up, otherwise one or two decimals.
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    if a >= 100.0 {
        grouped(x)
    } else if a >= 10.0 || a == a.trunc() {
        format!("{}", (x * 10.0).round() / 10.0)
    } else {
        format!("{x:.2}")
    }
}

/// `x` rounded to an integer with a comma every three digits.
pub(crate) fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.abs().round());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if x < 0.0 && out != "0" {
        format!("-{out}")
    } else {
        out
    }
}

pub(crate) fn money(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("${}", grouped(x))
    } else {
        format!("${x:.2}")
    }
}

pub(crate) fn pct(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p >= 100.0 {
        format!("{}%", grouped(p))
    } else if p >= 10.0 {
        format!("{}%", p.round())
    } else if p > 0.0 && p < 0.05 {
        "<0.1%".to_string()
    } else {
        format!("{:.1}%", (p * 10.0).round() / 10.0)
    }
}
