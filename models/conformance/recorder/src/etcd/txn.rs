//! `cN txn if=CMP;… then=OP;… else=OP;…`. Compares: `value(K)=V`, `version(K)>N`,
//! `create(K)<R`, `mod(K)!=R`, `lease(K)=lK` (operators `=`, `!=`, `>`, `<`), over a range
//! with `(K,END)`. Ops: `put(K,V)`, `get(K)`, `get(K,END)`, `delete(K)`, `delete(K,END)`
//! (END: the range's end, exclusive), `txn[if:CMP&…|then:OP&…|else:OP&…]` (nested).

use crate::Failure;
use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse};
use probe_format::{Roles, Step};

/// The transaction the step writes.
pub fn build(step: &Step, leases: &Roles) -> Result<Txn, Failure> {
    let list = |key: &str| -> Vec<String> {
        step.named(key)
            .unwrap_or("")
            .split(';')
            .filter(|item| !item.is_empty())
            .map(str::to_string)
            .collect()
    };
    let compares = list("if")
        .iter()
        .map(|text| compare(text, leases).map_err(|e| Failure::bad_step(step, "if", e)))
        .collect::<Result<Vec<_>, _>>()?;
    let ops = |key: &str| {
        list(key)
            .iter()
            .map(|text| op(text, leases).map_err(|e| Failure::bad_step(step, key, e)))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(Txn::new()
        .when(compares)
        .and_then(ops("then")?)
        .or_else(ops("else")?))
}

/// `target(key)`, then the rest: `("value", "k", "=v")`.
fn call(text: &str) -> Option<(&str, Vec<&str>, &str)> {
    let (name, rest) = text.split_once('(')?;
    let (inside, after) = rest.split_once(')')?;
    Some((name, inside.split(',').collect(), after))
}

fn compare(text: &str, leases: &Roles) -> Result<Compare, String> {
    let wanted = || {
        format!(
            "compares value(K)=V, version(K)>N, create(K)<R, mod(K)!=R or lease(K)=lK, not `{text}`"
        )
    };
    let (target, keys, rest) = call(text).ok_or_else(wanted)?;
    let (key, end) = match keys.as_slice() {
        [key] => (key, None),
        [key, end] => (key, Some(range_end(end))),
        _ => return Err(wanted()),
    };
    let (op, value) = [
        ("!=", CompareOp::NotEqual),
        ("=", CompareOp::Equal),
        (">", CompareOp::Greater),
        ("<", CompareOp::Less),
    ]
    .iter()
    .find_map(|(sign, op)| rest.strip_prefix(sign).map(|value| (*op, value)))
    .ok_or_else(wanted)?;
    let number = || value.parse::<i64>().map_err(|_| wanted());
    let compare = match target {
        "value" => Compare::value(*key, op, value),
        "version" => Compare::version(*key, op, number()?),
        "create" => Compare::create_revision(*key, op, number()?),
        "mod" => Compare::mod_revision(*key, op, number()?),
        "lease" => Compare::lease(*key, op, super::lease_id(value, leases)),
        _ => return Err(wanted()),
    };
    Ok(match end {
        Some(end) => compare.with_range(end),
        None => compare,
    })
}

/// A range end as written: `\0` is etcd's NUL, to the end of the keyspace (README).
fn range_end(end: &str) -> Vec<u8> {
    if end == "\\0" {
        vec![0]
    } else {
        end.as_bytes().to_vec()
    }
}

/// `txn[if:CMP&…|then:OP&…|else:OP&…]`: a nested transaction.
fn nested(text: &str, leases: &Roles) -> Result<TxnOp, String> {
    let wanted = || format!("a nested txn[if:CMP&…|then:OP&…|else:OP&…], not `{text}`");
    let inner = text
        .strip_prefix("txn[")
        .and_then(|inner| inner.strip_suffix(']'))
        .ok_or_else(wanted)?;
    let mut txn = Txn::new();
    for part in inner.split('|').filter(|part| !part.is_empty()) {
        let (name, items) = part.split_once(':').ok_or_else(wanted)?;
        let items: Vec<&str> = items.split('&').filter(|item| !item.is_empty()).collect();
        txn = match name {
            "if" => txn.when(
                items
                    .iter()
                    .map(|item| compare(item, leases))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            "then" => txn.and_then(
                items
                    .iter()
                    .map(|item| op(item, leases))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            "else" => txn.or_else(
                items
                    .iter()
                    .map(|item| op(item, leases))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => return Err(wanted()),
        };
    }
    Ok(TxnOp::txn(txn))
}

fn op(text: &str, leases: &Roles) -> Result<TxnOp, String> {
    if text.starts_with("txn[") {
        return nested(text, leases);
    }
    let wanted =
        || format!("ops put(K,V), get(K), get(K,END), delete(K) or delete(K,END), not `{text}`");
    let (name, args, rest) = call(text).ok_or_else(wanted)?;
    if !rest.is_empty() {
        return Err(wanted());
    }
    Ok(match (name, args.as_slice()) {
        ("put", [key, value]) => TxnOp::put(*key, *value, None),
        ("get", [key]) => TxnOp::get(*key, None),
        ("get", [key, end]) => TxnOp::get(*key, Some(GetOptions::new().with_range(range_end(end)))),
        ("delete", [key]) => TxnOp::delete(*key, None),
        ("delete", [key, end]) => {
            TxnOp::delete(*key, Some(DeleteOptions::new().with_range(range_end(end))))
        }
        _ => return Err(wanted()),
    })
}

/// The lines under `ok rev=R succeeded=B`: `  put`, `  get count=C` and its `    KV` lines,
/// `  delete deleted=N`, `  txn succeeded=B` and its ops' lines two spaces deeper.
pub fn answer_lines(responses: Vec<TxnOpResponse>, leases: &mut Roles) -> Vec<String> {
    let mut lines = Vec::new();
    push_lines(responses, 1, leases, &mut lines);
    lines
}

fn push_lines(
    responses: Vec<TxnOpResponse>,
    depth: usize,
    leases: &mut Roles,
    lines: &mut Vec<String>,
) {
    let indent = "  ".repeat(depth);
    for response in responses {
        match response {
            TxnOpResponse::Put(_) => lines.push(format!("{indent}put")),
            TxnOpResponse::Get(get) => {
                lines.push(format!("{indent}get count={}", get.count()));
                for kv in get.kvs() {
                    lines.push(format!("{indent}  {}", super::kv(kv, leases)));
                }
            }
            TxnOpResponse::Delete(delete) => {
                lines.push(format!("{indent}delete deleted={}", delete.deleted()))
            }
            TxnOpResponse::Txn(txn) => {
                lines.push(format!("{indent}txn succeeded={}", txn.succeeded()));
                push_lines(txn.op_responses(), depth + 1, leases, lines);
            }
        }
    }
}
