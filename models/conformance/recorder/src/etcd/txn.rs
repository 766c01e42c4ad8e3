//! `cN txn if=CMP;… then=OP;… else=OP;…`. Compares: `value(K)=V`, `version(K)>N`,
//! `create(K)<R`, `mod(K)!=R`, `lease(K)=lK` (operators `=`, `!=`, `>`, `<`). Ops: `put(K,V)`,
//! `get(K)`, `get(K,END)`, `delete(K)`, `delete(K,END)` (END: the range's end, exclusive).

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
            .map(|text| op(text).map_err(|e| Failure::bad_step(step, key, e)))
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
    let [key] = keys.as_slice() else {
        return Err(wanted());
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
    Ok(match target {
        "value" => Compare::value(*key, op, value),
        "version" => Compare::version(*key, op, number()?),
        "create" => Compare::create_revision(*key, op, number()?),
        "mod" => Compare::mod_revision(*key, op, number()?),
        "lease" => Compare::lease(*key, op, super::lease_id(value, leases)),
        _ => return Err(wanted()),
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

fn op(text: &str) -> Result<TxnOp, String> {
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
/// `  delete deleted=N`.
pub fn answer_lines(responses: Vec<TxnOpResponse>, leases: &mut Roles) -> Vec<String> {
    let mut lines = Vec::new();
    for response in responses {
        match response {
            TxnOpResponse::Put(_) => lines.push("  put".to_string()),
            TxnOpResponse::Get(get) => {
                lines.push(format!("  get count={}", get.count()));
                for kv in get.kvs() {
                    lines.push(format!("    {}", super::kv(kv, leases)));
                }
            }
            TxnOpResponse::Delete(delete) => {
                lines.push(format!("  delete deleted={}", delete.deleted()))
            }
            TxnOpResponse::Txn(_) => lines.push("  txn".to_string()),
        }
    }
    lines
}
