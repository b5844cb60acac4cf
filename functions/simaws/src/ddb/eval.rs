//! Evaluation of parsed expressions against an item: conditions, update actions (all
//! right-hand sides read the item as it was before the update, as DynamoDB does) and
//! projections.

use super::expr::{show, Cond, Elem, Op, Operand, Path, SetOp, SetVal, Update};
use super::value::{compare, equal, Av, Item, Num};
use crate::error::ApiError;
use std::cmp::Ordering;

/// The value at `path` in `item`, if any.
pub(crate) fn resolve<'a>(item: &'a Item, path: &Path) -> Option<&'a Av> {
    let mut it = path.iter();
    let mut cur = match it.next()? {
        Elem::Attr(a) => item.get(a)?,
        Elem::Index(_) => return None,
    };
    for e in it {
        cur = match (e, cur) {
            (Elem::Attr(a), Av::M(m)) => m.get(a)?,
            (Elem::Index(i), Av::L(l)) => l.get(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn operand(item: &Item, o: &Operand) -> Option<Av> {
    match o {
        Operand::Path(p) => resolve(item, p).cloned(),
        Operand::Value(v) => Some(v.clone()),
        Operand::Size(p) => {
            let n = match resolve(item, p)? {
                Av::S(s) => s.len(),
                Av::B(b) => crate::b64_decode(b)?.len(),
                Av::L(l) => l.len(),
                Av::M(m) => m.len(),
                Av::Ss(s) | Av::Ns(s) | Av::Bs(s) => s.len(),
                _ => return None,
            };
            Some(Av::N(n.to_string()))
        }
    }
}

fn cmp(a: Option<&Av>, op: Op, b: Option<&Av>) -> bool {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        _ => return op == Op::Ne,
    };
    match op {
        Op::Eq => equal(a, b),
        Op::Ne => !equal(a, b),
        _ => match compare(a, b) {
            None => false,
            Some(o) => match op {
                Op::Lt => o == Ordering::Less,
                Op::Le => o != Ordering::Greater,
                Op::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            },
        },
    }
}

/// Whether `item` (empty when the item does not exist) satisfies `c`.
pub(crate) fn holds(item: &Item, c: &Cond) -> bool {
    match c {
        Cond::Cmp(a, op, b) => cmp(operand(item, a).as_ref(), *op, operand(item, b).as_ref()),
        Cond::Between(a, lo, hi) => {
            let (a, lo, hi) = (operand(item, a), operand(item, lo), operand(item, hi));
            cmp(a.as_ref(), Op::Ge, lo.as_ref()) && cmp(a.as_ref(), Op::Le, hi.as_ref())
        }
        Cond::In(a, list) => {
            let a = operand(item, a);
            list.iter().any(|o| cmp(a.as_ref(), Op::Eq, operand(item, o).as_ref()))
        }
        Cond::And(a, b) => holds(item, a) && holds(item, b),
        Cond::Or(a, b) => holds(item, a) || holds(item, b),
        Cond::Not(a) => !holds(item, a),
        Cond::Exists(p) => resolve(item, p).is_some(),
        Cond::NotExists(p) => resolve(item, p).is_none(),
        Cond::Type(p, t) => match (resolve(item, p), operand(item, t)) {
            (Some(v), Some(Av::S(t))) => v.type_name() == t,
            _ => false,
        },
        Cond::BeginsWith(a, b) => match (operand(item, a), operand(item, b)) {
            (Some(Av::S(x)), Some(Av::S(y))) => x.starts_with(&y),
            (Some(Av::B(x)), Some(Av::B(y))) => match (crate::b64_decode(&x), crate::b64_decode(&y)) {
                (Some(x), Some(y)) => x.starts_with(&y),
                _ => false,
            },
            _ => false,
        },
        Cond::Contains(a, b) => match (operand(item, a), operand(item, b)) {
            (Some(Av::S(x)), Some(Av::S(y))) => x.contains(&y),
            (Some(Av::Ss(s)), Some(Av::S(y))) | (Some(Av::Bs(s)), Some(Av::B(y))) => s.contains(&y),
            (Some(Av::Ns(s)), Some(Av::N(y))) => {
                s.iter().any(|n| equal(&Av::N(n.clone()), &Av::N(y.clone())))
            }
            (Some(Av::L(l)), Some(y)) => l.iter().any(|v| equal(v, &y)),
            _ => false,
        },
    }
}

fn missing(p: &Path) -> ApiError {
    ApiError::validation(format!(
        "The provided expression refers to an attribute that does not exist in the item: {}",
        show(p)
    ))
}

fn set_operand(item: &Item, o: &SetOp) -> Result<Av, ApiError> {
    match o {
        SetOp::Value(v) => Ok(v.clone()),
        SetOp::Path(p) => resolve(item, p).cloned().ok_or_else(|| missing(p)),
        SetOp::IfNotExists(p, v) => match resolve(item, p) {
            Some(x) => Ok(x.clone()),
            None => set_operand(item, v),
        },
        SetOp::ListAppend(a, b) => match (set_operand(item, a)?, set_operand(item, b)?) {
            (Av::L(mut x), Av::L(y)) => {
                x.extend(y);
                Ok(Av::L(x))
            }
            _ => Err(ApiError::validation(
                "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: list_append",
            )),
        },
    }
}

fn arith(a: Av, b: Av, minus: bool) -> Result<Av, ApiError> {
    let op = if minus { "-" } else { "+" };
    match (a.num(), b.num()) {
        (Some(x), Some(y)) => Ok(Av::N(Num::add(x, if minus { y.neg() } else { y })?.to_string())),
        _ => Err(ApiError::validation(format!(
            "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: {op}"
        ))),
    }
}

fn set_value(item: &Item, v: &SetVal) -> Result<Av, ApiError> {
    match v {
        SetVal::One(o) => set_operand(item, o),
        SetVal::Plus(a, b) => arith(set_operand(item, a)?, set_operand(item, b)?, false),
        SetVal::Minus(a, b) => arith(set_operand(item, a)?, set_operand(item, b)?, true),
    }
}

fn invalid_path() -> ApiError {
    ApiError::validation("The document path provided in the update expression is invalid for update")
}

/// Writes `v` at `path` (the parent must exist; a list index past the end appends).
pub(crate) fn assign(item: &mut Item, path: &Path, v: Av) -> Result<(), ApiError> {
    let (last, parents) = path.split_last().ok_or_else(invalid_path)?;
    let Some((Elem::Attr(first), rest)) = parents.split_first().map(|(f, r)| (f.clone(), r)) else {
        return match last {
            Elem::Attr(a) => {
                item.insert(a.clone(), v);
                Ok(())
            }
            Elem::Index(_) => Err(invalid_path()),
        };
    };
    let mut cur = item.get_mut(&first).ok_or_else(invalid_path)?;
    for e in rest {
        cur = match (e, cur) {
            (Elem::Attr(a), Av::M(m)) => m.get_mut(a).ok_or_else(invalid_path)?,
            (Elem::Index(i), Av::L(l)) => l.get_mut(*i).ok_or_else(invalid_path)?,
            _ => return Err(invalid_path()),
        };
    }
    match (last, cur) {
        (Elem::Attr(a), Av::M(m)) => {
            m.insert(a.clone(), v);
        }
        (Elem::Index(i), Av::L(l)) if *i < l.len() => l[*i] = v,
        (Elem::Index(_), Av::L(l)) => l.push(v),
        _ => return Err(invalid_path()),
    }
    Ok(())
}

/// Removes the value at `path`, if there is one.
fn unset(item: &mut Item, path: &Path) {
    let Some((last, parents)) = path.split_last() else { return };
    if parents.is_empty() {
        if let Elem::Attr(a) = last {
            item.remove(a);
        }
        return;
    }
    let Some(Elem::Attr(first)) = parents.first() else { return };
    let Some(mut cur) = item.get_mut(first) else { return };
    for e in &parents[1..] {
        cur = match (e, cur) {
            (Elem::Attr(a), Av::M(m)) => match m.get_mut(a) {
                Some(x) => x,
                None => return,
            },
            (Elem::Index(i), Av::L(l)) => match l.get_mut(*i) {
                Some(x) => x,
                None => return,
            },
            _ => return,
        };
    }
    match (last, cur) {
        (Elem::Attr(a), Av::M(m)) => {
            m.remove(a);
        }
        (Elem::Index(i), Av::L(l)) if *i < l.len() => {
            l.remove(*i);
        }
        _ => {}
    }
}

fn overlap(a: &Path, b: &Path) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// The paths an update writes, refusing two that overlap and any key attribute.
pub(crate) fn updated_paths(u: &Update, keys: &[&str]) -> Result<Vec<Path>, ApiError> {
    let paths: Vec<Path> = u
        .set
        .iter()
        .map(|(p, _)| p.clone())
        .chain(u.remove.iter().cloned())
        .chain(u.add.iter().map(|(p, _)| p.clone()))
        .chain(u.delete.iter().map(|(p, _)| p.clone()))
        .collect();
    for (i, a) in paths.iter().enumerate() {
        if let Some(b) = paths[i + 1..].iter().find(|b| overlap(a, b)) {
            return Err(ApiError::validation(format!(
                "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [{}], path two: [{}]",
                show(a),
                show(b)
            )));
        }
        if let Some(Elem::Attr(k)) = a.first().filter(|_| a.len() == 1) {
            if keys.contains(&k.as_str()) {
                return Err(ApiError::validation(format!(
                    "One or more parameter values were invalid: Cannot update attribute {k}. This attribute is part of the key"
                )));
            }
        }
    }
    Ok(paths)
}

fn set_union(old: Option<&Av>, add: &Av, p: &Path) -> Result<Av, ApiError> {
    let bad = || {
        ApiError::validation(format!(
            "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, path: {}",
            show(p)
        ))
    };
    match (old, add) {
        (None, v @ (Av::N(_) | Av::Ss(_) | Av::Ns(_) | Av::Bs(_))) => Ok(v.clone()),
        (Some(o @ Av::N(_)), n @ Av::N(_)) => arith(o.clone(), n.clone(), false),
        (Some(Av::Ss(x)), Av::Ss(y)) => Ok(Av::Ss(union(x, y))),
        (Some(Av::Bs(x)), Av::Bs(y)) => Ok(Av::Bs(union(x, y))),
        (Some(Av::Ns(x)), Av::Ns(y)) => Ok(Av::Ns(union(x, y))),
        _ => Err(bad()),
    }
}

fn union(x: &[String], y: &[String]) -> Vec<String> {
    let mut out = x.to_vec();
    out.extend(y.iter().filter(|e| !x.contains(e)).cloned());
    out
}

/// Applies `u` to `old` (empty when the item does not exist yet): the new item.
pub(crate) fn apply(old: &Item, u: &Update) -> Result<Item, ApiError> {
    let values: Vec<Av> = u.set.iter().map(|(_, v)| set_value(old, v)).collect::<Result<_, _>>()?;
    let mut new = old.clone();
    for ((p, _), v) in u.set.iter().zip(values) {
        assign(&mut new, p, v)?;
    }
    for p in &u.remove {
        unset(&mut new, p);
    }
    for (p, v) in &u.add {
        let next = set_union(resolve(old, p), v, p)?;
        assign(&mut new, p, next)?;
    }
    for (p, v) in &u.delete {
        let next = match (resolve(old, p), v) {
            (None, _) => continue,
            (Some(Av::Ss(x)), Av::Ss(y)) => Av::Ss(x.iter().filter(|e| !y.contains(e)).cloned().collect()),
            (Some(Av::Ns(x)), Av::Ns(y)) => Av::Ns(x.iter().filter(|e| !y.contains(e)).cloned().collect()),
            (Some(Av::Bs(x)), Av::Bs(y)) => Av::Bs(x.iter().filter(|e| !y.contains(e)).cloned().collect()),
            _ => return Err(ApiError::validation(
                "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE",
            )),
        };
        match next {
            Av::Ss(s) | Av::Ns(s) | Av::Bs(s) if s.is_empty() => unset(&mut new, p),
            v => assign(&mut new, p, v)?,
        }
    }
    Ok(new)
}

/// The parts of `item` named by `paths` (nested maps and lists rebuilt around them).
pub(crate) fn project(item: &Item, paths: &[Path]) -> Item {
    let mut out = Item::new();
    for p in paths {
        let Some(v) = resolve(item, p) else { continue };
        let Some(Elem::Attr(first)) = p.first() else { continue };
        if p.len() == 1 {
            out.insert(first.clone(), v.clone());
            continue;
        }
        let slot = out.entry(first.clone()).or_insert_with(|| empty_like(&p[1]));
        place(slot, &p[1..], v.clone());
    }
    out
}

fn empty_like(e: &Elem) -> Av {
    match e {
        Elem::Attr(_) => Av::M(Item::new()),
        Elem::Index(_) => Av::L(Vec::new()),
    }
}

fn place(slot: &mut Av, rest: &[Elem], v: Av) {
    let (head, tail) = match rest.split_first() {
        Some(x) => x,
        None => return,
    };
    let next = match (head, slot) {
        (Elem::Attr(a), Av::M(m)) => {
            if tail.is_empty() {
                m.insert(a.clone(), v);
                return;
            }
            m.entry(a.clone()).or_insert_with(|| empty_like(&tail[0]))
        }
        (Elem::Index(_), Av::L(l)) => {
            if tail.is_empty() {
                l.push(v);
                return;
            }
            l.push(empty_like(&tail[0]));
            let last = l.len() - 1;
            &mut l[last]
        }
        _ => return,
    };
    place(next, tail, v);
}

#[cfg(test)]
mod tests {
    use super::super::expr::{condition, projection, update, Placeholders};
    use super::*;
    use serde_json::json;

    fn ph(names: serde_json::Value, values: serde_json::Value) -> Placeholders {
        let req = json!({ "ExpressionAttributeNames": names, "ExpressionAttributeValues": values });
        Placeholders::from_request(&req).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn item(v: serde_json::Value) -> Item {
        super::super::value::item_from_json(&v).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn check(text: &str, values: serde_json::Value, it: &Item) -> bool {
        let p = ph(json!({ "#a": "a", "#b": "b", "#m": "m", "#l": "l" }), values);
        let c = condition(text, "ConditionExpression", &p).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        holds(it, &c)
    }

    fn sample() -> Item {
        item(json!({
            "a": { "N": "5" }, "b": { "S": "job#12" },
            "m": { "M": { "k": { "S": "v" }, "n": { "M": { "deep": { "N": "1" } } } } },
            "l": { "L": [{ "S": "x" }, { "N": "2" }] }, "ss": { "SS": ["p", "q"] }
        }))
    }

    #[test]
    fn comparisons_treat_missing_and_mistyped_operands_as_dynamodb_does() {
        let it = sample();
        let five = json!({ ":v": { "N": "5" }, ":s": { "S": "5" } });
        assert!(check("#a = :v", five.clone(), &it));
        assert!(!check("#a = :s", five.clone(), &it), "a number never equals a string");
        assert!(check("#a <> :s", five.clone(), &it));
        assert!(!check("#a < :s", five.clone(), &it), "different types do not order");
        let missing = Item::new();
        assert!(!check("#a = :v", five.clone(), &missing));
        assert!(!check("#a < :v", five.clone(), &missing));
        assert!(check("#a <> :v", five.clone(), &missing), "<> holds when the attribute is missing");
        assert!(check("attribute_not_exists(#a) OR #a < :v", five, &missing));
    }

    #[test]
    fn precedence_is_not_then_and_then_or() {
        let it = sample();
        let v = json!({ ":t": { "N": "5" }, ":f": { "N": "6" } });
        assert!(check("#a = :f OR #a = :t AND NOT #a = :f", v.clone(), &it));
        assert!(!check("(#a = :f OR #a = :t) AND #a = :f", v.clone(), &it));
        assert!(check("NOT (#a = :f)", v, &it));
    }

    #[test]
    fn functions_between_in_and_nested_paths() {
        let it = sample();
        let v = json!({
            ":lo": { "N": "1" }, ":hi": { "N": "10" }, ":p": { "S": "job#" }, ":x": { "S": "x" }, ":q": { "S": "q" },
            ":two": { "N": "2" }, ":n": { "S": "N" }, ":one": { "N": "1" }, ":v": { "S": "v" }, ":six": { "N": "6" }
        });
        let t = |e: &str| check(e, v.clone(), &it);
        assert!(t("#a BETWEEN :lo AND :hi AND begins_with(#b, :p)"));
        assert!(t("#a IN (:six, :hi, :lo) OR contains(#l, :x)"));
        assert!(t("contains(ss, :q) AND contains(#b, :p) AND size(#l) = :two AND attribute_type(#a, :n)"));
        assert!(t("#m.n.deep = :one AND #m.k = :v AND #l[1] = :two AND attribute_exists(#l[0])"));
        assert!(!t("attribute_exists(#l[5]) OR attribute_exists(#m.nope) OR #a IN (:six, :hi)"));
    }

    #[test]
    fn placeholders_must_be_defined_and_used() {
        let p = ph(json!({ "#a": "a" }), json!({ ":v": { "N": "1" }, ":unused": { "N": "2" } }));
        assert!(condition("#zz = :v", "ConditionExpression", &p).is_err(), "an undefined name");
        assert!(condition("#a = :nope", "ConditionExpression", &p).is_err(), "an undefined value");
        let p = ph(json!({ "#a": "a" }), json!({ ":v": { "N": "1" }, ":unused": { "N": "2" } }));
        let _ = condition("#a = :v", "ConditionExpression", &p);
        assert!(p.check_all_used().is_err(), "an unused value is refused");
        assert!(condition("#a = ", "ConditionExpression", &p).is_err());
        assert!(condition("", "ConditionExpression", &p).is_err());
    }

    fn run(
        text: &str,
        names: serde_json::Value,
        values: serde_json::Value,
        it: &Item,
    ) -> Result<Item, ApiError> {
        let p = ph(names, values);
        let u = update(text, &p)?;
        updated_paths(&u, &["pk"])?;
        p.check_all_used()?;
        apply(it, &u)
    }

    #[test]
    fn updates_read_the_old_item_and_apply_every_clause() {
        let it = sample();
        let names =
            json!({ "#a": "a", "#c": "c", "#l": "l", "#m": "m", "#k": "job@1", "#ss": "ss", "#b": "b" });
        let values = json!({
            ":z": { "N": "0" }, ":one": { "N": "1" }, ":more": { "L": [{ "S": "y" }] }, ":ten": { "N": "0.1" },
            ":q": { "SS": ["q", "r"] }, ":pq": { "SS": ["p", "q", "r"] }, ":s": { "S": "new" }
        });
        let text = "SET #c = if_not_exists(#c, :z) + :one, #a = #a - :ten, #l = list_append(#l, :more), #m.#k = :s, #b = #a \
                    REMOVE #l[0] ADD #ss :q";
        let e = run(text, names.clone(), values.clone(), &it).err();
        assert!(e.is_some_and(|e| e.message.contains("overlap")), "SET #l and REMOVE #l[0] overlap");
        let text = "SET #c = if_not_exists(#c, :z) + :one, #a = #a - :ten, #l = list_append(#l, :more), #m.#k = :s, #b = #a \
                    ADD #ss :q";
        let values2 = json!({
            ":z": { "N": "0" }, ":one": { "N": "1" }, ":more": { "L": [{ "S": "y" }] }, ":ten": { "N": "0.1" },
            ":q": { "SS": ["q", "r"] }, ":s": { "S": "new" }
        });
        let new = run(text, names.clone(), values2, &it).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(new.get("c"), Some(&Av::N("1".into())));
        assert_eq!(new.get("a"), Some(&Av::N("4.9".into())), "exact decimal arithmetic");
        assert_eq!(new.get("b"), Some(&Av::N("5".into())), "every right-hand side reads the old item");
        assert_eq!(new.get("l").map(|l| matches!(l, Av::L(v) if v.len() == 3)), Some(true));
        assert_eq!(
            resolve(&new, &vec![Elem::Attr("m".into()), Elem::Attr("job@1".into())]),
            Some(&Av::S("new".into()))
        );
        assert_eq!(new.get("ss"), Some(&Av::Ss(vec!["p".into(), "q".into(), "r".into()])));
        let names2 = json!({ "#ss": "ss" });
        let gone = run("DELETE #ss :pq", names2, json!({ ":pq": { "SS": ["p", "q", "r"] } }), &new)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(!gone.contains_key("ss"), "a set emptied by DELETE is removed");
    }

    #[test]
    fn updates_refuse_what_dynamodb_refuses() {
        let it = sample();
        let one = json!({ ":one": { "N": "1" } });
        let refused = |t: &str, names: &serde_json::Value, values: &serde_json::Value| {
            run(t, names.clone(), values.clone(), &it).is_err()
        };
        assert!(
            refused("SET #x = #x + :one", &json!({ "#x": "x" }), &one),
            "arithmetic on a missing attribute"
        );
        assert!(refused("SET #pk = :one", &json!({ "#pk": "pk" }), &one), "a key attribute");
        assert!(refused("SET #x.#a = :one", &json!({ "#x": "x", "#a": "a" }), &one), "a missing parent map");
        assert!(refused("SET #a = :one SET #m = :one", &json!({ "#a": "a", "#m": "m" }), &one), "SET twice");
        assert!(
            refused("SET #a = list_append(#a, :one)", &json!({ "#a": "a" }), &one),
            "list_append on a number"
        );
        assert!(refused("ADD #m :one", &json!({ "#m": "m" }), &one), "ADD to a map");
    }

    #[test]
    fn projections_rebuild_nested_documents() {
        let it = sample();
        let p = ph(json!({ "#m": "m", "#b": "b" }), json!({}));
        let paths = projection("#m.n.deep, #b, l[1]", &p).unwrap_or_else(|e| panic!("{e:?}"));
        let out = project(&it, &paths);
        assert_eq!(out.len(), 3);
        assert_eq!(
            resolve(&out, &vec![Elem::Attr("m".into()), Elem::Attr("n".into()), Elem::Attr("deep".into())]),
            Some(&Av::N("1".into()))
        );
        assert_eq!(out.get("l"), Some(&Av::L(vec![Av::N("2".into())])));
    }
}
