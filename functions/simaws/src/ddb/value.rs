//! DynamoDB attribute values: the wire form (DynamoDB JSON) decoded once into [`Av`], numbers
//! normalised into exact decimals ([`Num`]), and the key values tables and indexes sort by.

use crate::error::ApiError;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// An item: attribute name -> value, sorted so no response depends on hash order.
pub(crate) type Item = BTreeMap<String, Av>;

/// One attribute value. Numbers are kept in their canonical text (what DynamoDB returns);
/// binaries in their base64 text (compared decoded, see [`KeyVal`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Av {
    S(String),
    N(String),
    B(String),
    Bool(bool),
    Null,
    L(Vec<Av>),
    M(Item),
    Ss(Vec<String>),
    Ns(Vec<String>),
    Bs(Vec<String>),
}

/// An exact decimal: `mant × 10^-scale`, normalised (no trailing zero in `mant` when scale > 0),
/// so equal numbers have equal representations. 38 significant digits fit in an i128, which is
/// DynamoDB's precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Num {
    mant: i128,
    scale: u32,
}

const MAX_SCALE: u32 = 130;

impl Num {
    pub(crate) fn parse(s: &str) -> Result<Num, ApiError> {
        let bad =
            || ApiError::validation(format!("The parameter cannot be converted to a numeric value: {s}"));
        let t = s.trim();
        let (mantissa, exp) = match t.find(['e', 'E']) {
            Some(i) => (&t[..i], t[i + 1..].parse::<i32>().map_err(|_| bad())?),
            None => (t, 0),
        };
        let (neg, digits) = match mantissa.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if (int.is_empty() && frac.is_empty()) || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let all = format!("{int}{frac}");
        let all = all.trim_start_matches('0');
        let mut scale = frac.len() as i64 - i64::from(exp);
        let mut body = all.to_string();
        while scale < 0 {
            body.push('0');
            scale += 1;
        }
        if body.is_empty() {
            return Ok(Num { mant: 0, scale: 0 });
        }
        if body.len() > 38 {
            // Beyond DynamoDB's 38 digits only trailing zeros may be dropped.
            let trimmed = body.trim_end_matches('0');
            let dropped = body.len() - trimmed.len();
            if trimmed.len() > 38 || (dropped as i64) > scale {
                return Err(ApiError::validation(
                    "Attempting to store more than 38 significant digits in a Number",
                ));
            }
            scale -= dropped as i64;
            body = trimmed.to_string();
        }
        let mant: i128 = body.parse().map_err(|_| bad())?;
        let scale = u32::try_from(scale).ok().filter(|s| *s <= MAX_SCALE).ok_or_else(bad)?;
        Ok(Num { mant: if neg { -mant } else { mant }, scale }.normalised())
    }

    fn normalised(mut self) -> Num {
        while self.scale > 0 && self.mant % 10 == 0 {
            self.mant /= 10;
            self.scale -= 1;
        }
        if self.mant == 0 {
            self.scale = 0;
        }
        self
    }

    /// Both at one scale, if it fits.
    fn aligned(a: Num, b: Num) -> Option<(i128, i128, u32)> {
        let scale = a.scale.max(b.scale);
        let up = |n: Num| 10i128.checked_pow(scale - n.scale).and_then(|p| n.mant.checked_mul(p));
        Some((up(a)?, up(b)?, scale))
    }

    pub(crate) fn add(a: Num, b: Num) -> Result<Num, ApiError> {
        let (x, y, scale) = Num::aligned(a, b).ok_or_else(Num::overflow)?;
        Ok(Num { mant: x.checked_add(y).ok_or_else(Num::overflow)?, scale }.normalised())
    }

    pub(crate) fn neg(self) -> Num {
        Num { mant: -self.mant, scale: self.scale }
    }

    fn overflow() -> ApiError {
        ApiError::validation(
            "Number overflow. Attempting to store a number with magnitude larger than supported range",
        )
    }

    fn as_f64(self) -> f64 {
        self.mant as f64 / 10f64.powi(self.scale as i32)
    }
}

impl Ord for Num {
    fn cmp(&self, o: &Num) -> Ordering {
        match Num::aligned(*self, *o) {
            Some((x, y, _)) => x.cmp(&y),
            None => self.as_f64().total_cmp(&o.as_f64()),
        }
    }
}

impl PartialOrd for Num {
    fn partial_cmp(&self, o: &Num) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.scale == 0 {
            return write!(f, "{}", self.mant);
        }
        let digits = self.mant.unsigned_abs().to_string();
        let scale = self.scale as usize;
        let sign = if self.mant < 0 { "-" } else { "" };
        if digits.len() > scale {
            let (i, fr) = digits.split_at(digits.len() - scale);
            write!(f, "{sign}{i}.{fr}")
        } else {
            write!(f, "{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
        }
    }
}

/// A key attribute's value, ordered as DynamoDB orders sort keys: strings and binaries by
/// bytes, numbers numerically.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum KeyVal {
    N(Num),
    S(String),
    B(Vec<u8>),
}

impl KeyVal {
    /// The key value of `v`, if `v` has the scalar type `ty` (`S`, `N` or `B`).
    pub(crate) fn of(v: &Av, ty: &str) -> Option<KeyVal> {
        match (v, ty) {
            (Av::S(s), "S") => Some(KeyVal::S(s.clone())),
            (Av::N(n), "N") => Num::parse(n).ok().map(KeyVal::N),
            (Av::B(b), "B") => crate::b64_decode(b).map(KeyVal::B),
            _ => None,
        }
    }
}

impl Av {
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Av::S(_) => "S",
            Av::N(_) => "N",
            Av::B(_) => "B",
            Av::Bool(_) => "BOOL",
            Av::Null => "NULL",
            Av::L(_) => "L",
            Av::M(_) => "M",
            Av::Ss(_) => "SS",
            Av::Ns(_) => "NS",
            Av::Bs(_) => "BS",
        }
    }

    pub(crate) fn num(&self) -> Option<Num> {
        match self {
            Av::N(n) => Num::parse(n).ok(),
            _ => None,
        }
    }

    /// Decodes DynamoDB JSON (`{"S": "x"}`), normalising numbers and refusing empty sets.
    pub(crate) fn from_json(v: &Value) -> Result<Av, ApiError> {
        let bad = || {
            ApiError::validation(format!("Supplied AttributeValue is empty or has more than one type: {v}"))
        };
        let obj = v.as_object().filter(|o| o.len() == 1).ok_or_else(bad)?;
        let (ty, inner) = obj.iter().next().ok_or_else(bad)?;
        let str_of = |x: &Value| x.as_str().map(str::to_string).ok_or_else(bad);
        let strs = |x: &Value| -> Result<Vec<String>, ApiError> {
            let arr = x.as_array().ok_or_else(bad)?;
            if arr.is_empty() {
                return Err(ApiError::validation(
                    "One or more parameter values were invalid: An string set  may not be empty",
                ));
            }
            arr.iter().map(str_of).collect()
        };
        Ok(match ty.as_str() {
            "S" => Av::S(str_of(inner)?),
            "N" => Av::N(Num::parse(&str_of(inner)?)?.to_string()),
            "B" => Av::B(str_of(inner)?),
            "BOOL" => Av::Bool(inner.as_bool().ok_or_else(bad)?),
            "NULL" => Av::Null,
            "L" => {
                Av::L(inner.as_array().ok_or_else(bad)?.iter().map(Av::from_json).collect::<Result<_, _>>()?)
            }
            "M" => Av::M(item_from_json(inner)?),
            "SS" => Av::Ss(dedup(strs(inner)?, |a, b| a == b)),
            "NS" => {
                let ns = strs(inner)?
                    .iter()
                    .map(|n| Num::parse(n).map(|n| n.to_string()))
                    .collect::<Result<_, _>>()?;
                Av::Ns(dedup(ns, |a, b| a == b))
            }
            "BS" => Av::Bs(dedup(strs(inner)?, |a, b| a == b)),
            _ => return Err(bad()),
        })
    }

    pub(crate) fn to_json(&self) -> Value {
        match self {
            Av::S(s) => json!({ "S": s }),
            Av::N(n) => json!({ "N": n }),
            Av::B(b) => json!({ "B": b }),
            Av::Bool(b) => json!({ "BOOL": b }),
            Av::Null => json!({ "NULL": true }),
            Av::L(l) => json!({ "L": l.iter().map(Av::to_json).collect::<Vec<_>>() }),
            Av::M(m) => json!({ "M": item_to_json(m) }),
            Av::Ss(s) => json!({ "SS": s }),
            Av::Ns(s) => json!({ "NS": s }),
            Av::Bs(s) => json!({ "BS": s }),
        }
    }

    /// DynamoDB's size accounting (close enough for the 400 KB item and 1 MB page limits).
    pub(crate) fn size(&self) -> usize {
        match self {
            Av::S(s) | Av::B(s) => s.len(),
            Av::N(n) => n.len().div_ceil(2) + 1,
            Av::Bool(_) | Av::Null => 1,
            Av::L(l) => 3 + l.iter().map(|v| v.size() + 1).sum::<usize>(),
            Av::M(m) => 3 + item_size(m) + m.len(),
            Av::Ss(s) | Av::Bs(s) | Av::Ns(s) => s.iter().map(String::len).sum(),
        }
    }
}

fn dedup(v: Vec<String>, eq: impl Fn(&String, &String) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(v.len());
    for x in v {
        if !out.iter().any(|y| eq(y, &x)) {
            out.push(x);
        }
    }
    out
}

pub(crate) fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + v.size()).sum()
}

pub(crate) fn item_from_json(v: &Value) -> Result<Item, ApiError> {
    let obj =
        v.as_object().ok_or_else(|| ApiError::validation("an item must be a map of attribute values"))?;
    obj.iter().map(|(k, v)| Ok((k.clone(), Av::from_json(v)?))).collect()
}

pub(crate) fn item_to_json(item: &Item) -> Value {
    Value::Object(item_to_json_map(item))
}

/// An item in DynamoDB JSON, as a map.
pub(crate) fn item_to_json_map(item: &Item) -> Map<String, Value> {
    item.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()
}

/// Order and equality of two values as conditions see them: `None` when they are not comparable
/// (different types, or types without an order).
pub(crate) fn compare(a: &Av, b: &Av) -> Option<Ordering> {
    match (a, b) {
        (Av::S(x), Av::S(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Av::N(x), Av::N(y)) => Some(Num::parse(x).ok()?.cmp(&Num::parse(y).ok()?)),
        (Av::B(x), Av::B(y)) => Some(crate::b64_decode(x)?.cmp(&crate::b64_decode(y)?)),
        _ => None,
    }
}

/// Deep equality, with sets compared as sets.
pub(crate) fn equal(a: &Av, b: &Av) -> bool {
    let same_set = |x: &Vec<String>, y: &Vec<String>| x.len() == y.len() && x.iter().all(|e| y.contains(e));
    match (a, b) {
        (Av::Ss(x), Av::Ss(y)) | (Av::Ns(x), Av::Ns(y)) | (Av::Bs(x), Av::Bs(y)) => same_set(x, y),
        (Av::L(x), Av::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q)),
        (Av::M(x), Av::M(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_exact_and_canonical() {
        let n = |s: &str| Num::parse(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
        assert_eq!(n("1.50").to_string(), "1.5");
        assert_eq!(n("-0.0").to_string(), "0");
        assert_eq!(n("1e3").to_string(), "1000");
        assert_eq!(n("1.5e-3").to_string(), "0.0015");
        assert_eq!(n("0012").to_string(), "12");
        assert_eq!(
            n("170141183460469231731687303715884105").to_string(),
            "170141183460469231731687303715884105"
        );
        assert!(n("2") < n("10"));
        assert!(n("-2.5") < n("-2.25"));
        assert_eq!(n("10"), n("1e1"));
        assert_eq!(Num::add(n("0.1"), n("0.2")).map(|x| x.to_string()).ok(), Some("0.3".into()));
        assert_eq!(Num::add(n("5"), n("-7")).map(|x| x.to_string()).ok(), Some("-2".into()));
        assert!(Num::parse("abc").is_err());
        assert!(Num::parse("").is_err());
    }

    #[test]
    fn key_values_order_numbers_numerically() {
        let k = |s: &str| KeyVal::of(&Av::N(s.into()), "N");
        assert!(k("9") < k("10"));
        assert!(KeyVal::of(&Av::S("a".into()), "N").is_none());
    }

    #[test]
    fn json_round_trip() {
        let v = json!({"M": {"a": {"L": [{"N": "1.0"}, {"S": "x"}, {"NULL": true}]}, "b": {"SS": ["p", "q", "p"]}}});
        let av = Av::from_json(&v).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            av.to_json(),
            json!({"M": {"a": {"L": [{"N": "1"}, {"S": "x"}, {"NULL": true}]}, "b": {"SS": ["p", "q"]}}})
        );
        assert!(Av::from_json(&json!({"SS": []})).is_err());
        assert!(Av::from_json(&json!({"S": "a", "N": "1"})).is_err());
    }
}
