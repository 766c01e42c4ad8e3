//! `cN txn if=CMP;… then=OP;… else=OP;…` read into a transaction (the recorder's
//! `etcd/txn.rs` reads the same words into `etcd-client`'s).

use super::{UNGRANTED_LEASE, get};
use probe_format::{Roles, Step};
use sim::history::kv::{Compare, CompareOperator, CompareTarget, KvOperation};

/// A nested transaction's parts, as read.
#[derive(Default)]
struct NestedTxn {
    compares: Vec<Compare>,
    success: Vec<KvOperation>,
    failure: Vec<KvOperation>,
}

/// `if=CMP;… then=OP;… else=OP;…`.
pub(super) fn txn(step: &Step, leases: &Roles) -> Result<KvOperation, String> {
    let split = |text: Option<&str>| -> Vec<String> {
        text.filter(|t| !t.is_empty())
            .map(|t| t.split(';').map(str::to_string).collect())
            .unwrap_or_default()
    };
    let compares = split(step.named("if"))
        .iter()
        .map(|text| compare(text, leases))
        .collect::<Result<Vec<_>, _>>()?;
    let ops = |text| -> Result<Vec<KvOperation>, String> {
        split(text).iter().map(|op| txn_op(op, leases)).collect()
    };
    Ok(KvOperation::Txn {
        compares,
        success: ops(step.named("then"))?,
        failure: ops(step.named("else"))?,
    })
}

/// `value(K)=V`, `version(K)>N`, `create(K)<R`, `mod(K)!=R`, `lease(K)=lN`; `(K,END)` for a
/// compare over the range `[K, END)` (`\0`: every key from K).
fn compare(text: &str, leases: &Roles) -> Result<Compare, String> {
    let bad = || format!("compare `{text}`");
    let (target, rest) = text.split_once('(').ok_or_else(bad)?;
    let (key, rest) = rest.split_once(')').ok_or_else(bad)?;
    let (key, range_end) = match key.split_once(',') {
        Some((key, end)) => (key, Some(end.replace("\\0", "\0"))),
        None => (key, None),
    };
    let (operator, operand) = if let Some(v) = rest.strip_prefix("!=") {
        (CompareOperator::NotEqual, v)
    } else if let Some(v) = rest.strip_prefix('=') {
        (CompareOperator::Equal, v)
    } else if let Some(v) = rest.strip_prefix('>') {
        (CompareOperator::Greater, v)
    } else if let Some(v) = rest.strip_prefix('<') {
        (CompareOperator::Less, v)
    } else {
        return Err(bad());
    };
    let number = || operand.parse::<u64>().map_err(|_| bad());
    let target = match target {
        "value" => CompareTarget::Value(operand.to_string()),
        "version" => CompareTarget::Version(number()?),
        "create" => CompareTarget::CreateRevision(number()?),
        "mod" => CompareTarget::ModRevision(number()?),
        // A lease role, or a number (`0`: no lease).
        "lease" => CompareTarget::Lease(match operand.parse::<u64>() {
            Ok(id) => id,
            Err(_) if operand == "none" => 0,
            Err(_) => leases.id(operand).map_or(UNGRANTED_LEASE, |id| id as u64),
        }),
        _ => return Err(bad()),
    };
    Ok(Compare {
        key: key.to_string(),
        target,
        operator,
        range_end,
    })
}

/// `put(K,V)`, `get(K)`, `delete(K)`, `delete(K,END)` (the range `[K, END)`; `\0` for END is
/// etcd's NUL, to the end of the keyspace), `txn[if:CMP&…|then:OP&…|else:OP&…]` (a nested
/// transaction; its parts and items as the step's, with `&` between items).
fn txn_op(text: &str, leases: &Roles) -> Result<KvOperation, String> {
    let bad = || format!("txn op `{text}`");
    if let Some(inner) = text.strip_prefix("txn[") {
        let inner = inner.strip_suffix(']').ok_or_else(bad)?;
        let mut nested = NestedTxn::default();
        for part in inner.split('|').filter(|part| !part.is_empty()) {
            let (name, items) = part.split_once(':').ok_or_else(bad)?;
            let items = items.split('&').filter(|item| !item.is_empty());
            match name {
                "if" => {
                    for item in items {
                        nested.compares.push(compare(item, leases)?);
                    }
                }
                "then" | "else" => {
                    let branch = if name == "then" {
                        &mut nested.success
                    } else {
                        &mut nested.failure
                    };
                    for item in items {
                        branch.push(txn_op(item, leases)?);
                    }
                }
                _ => return Err(bad()),
            }
        }
        return Ok(KvOperation::Txn {
            compares: nested.compares,
            success: nested.success,
            failure: nested.failure,
        });
    }
    let (name, rest) = text.split_once('(').ok_or_else(bad)?;
    let inner = rest.strip_suffix(')').ok_or_else(bad)?;
    Ok(match name {
        "put" => {
            let (key, value) = inner.split_once(',').ok_or_else(bad)?;
            KvOperation::Put {
                prev_kv: false,
                key: key.into(),
                value: value.into(),
                lease: None,
            }
        }
        "get" => get(inner, None),
        "delete" => match inner.split_once(',') {
            None => KvOperation::Delete {
                prev_kv: false,
                key: inner.into(),
                range_end: None,
            },
            // `\0` is etcd's "to the end of the keyspace".
            Some((key, end)) => KvOperation::Delete {
                prev_kv: false,
                key: key.into(),
                range_end: Some(end.replace("\\0", "\0")),
            },
        },
        _ => return Err(bad()),
    })
}
