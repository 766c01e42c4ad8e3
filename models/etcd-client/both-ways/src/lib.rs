//! A user module written only against etcd-client 0.21.1's API (KV, txn, compact, errors),
//! as production code is. `models/etcd-client/both-ways.sh` checks that it compiles both
//! ways: against the real crate (no `--cfg madsim`) and against coordsim's drop-in.

use etcd_client::{
    Client, Compare, CompareOp, DeleteOptions, Error, GetOptions, PutOptions, SortOrder,
    SortTarget, Txn, TxnOp, TxnOpResponse,
};

/// Registers `name` in a service registry under `lease`, unless it is there already, and
/// lists the registry; answers whether this call registered it and who is listed.
pub async fn register(
    client: &mut Client,
    name: &str,
    address: &str,
    lease: i64,
) -> Result<(bool, Vec<String>), Error> {
    let key = format!("services/{name}");
    let register = Txn::new()
        .when([Compare::version(key.as_str(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key.as_str(),
            address,
            Some(PutOptions::new().with_lease(lease)),
        )])
        .or_else([TxnOp::get(key.as_str(), None)]);
    let answer = client.txn(register).await?;
    for response in answer.op_responses() {
        match response {
            TxnOpResponse::Put(put) => assert!(put.prev_key().is_none()),
            TxnOpResponse::Get(get) => assert!(get.count() <= 1),
            TxnOpResponse::Delete(_) | TxnOpResponse::Txn(_) => {}
        }
    }
    let listed = client
        .get(
            "services/",
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_sort(SortTarget::Create, SortOrder::Descend)
                    .with_limit(100),
            ),
        )
        .await?;
    let names = listed
        .kvs()
        .iter()
        .map(|kv| kv.key_str().map(str::to_string))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((answer.succeeded(), names))
}

/// Deregisters `name`, reading its last address; retries once when etcd says unavailable.
pub async fn deregister(client: &mut Client, name: &str) -> Result<Option<String>, Error> {
    let key = format!("services/{name}");
    let mut kv = client.kv_client();
    let options = || Some(DeleteOptions::new().with_prev_key());
    let deleted = match kv.delete(key.as_str(), options()).await {
        Err(Error::GRpcStatus(status)) if status.code() == tonic::Code::Unavailable => {
            kv.delete(key.as_str(), options()).await?
        }
        other => other?,
    };
    Ok(deleted
        .prev_kvs()
        .first()
        .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()))
}

/// Compacts everything before the current revision, as a maintenance job does.
pub async fn compact_history(client: &mut Client) -> Result<i64, Error> {
    let now = client
        .get(
            "services/",
            Some(GetOptions::new().with_prefix().with_count_only()),
        )
        .await?
        .header()
        .map_or(0, |header| header.revision());
    client.compact(now, None).await?;
    Ok(now)
}
