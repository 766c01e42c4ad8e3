//! `cN multi_read OP;OP;…` against the model (`get:PATH`, `children:PATH`): one line per
//! read, as the recorder writes what `zookeeper-client`'s `MultiReader` answers.

use super::{Piece, api_error_name};
use crate::render::list;
use models::zk::MultiReadOp;
use sim::history::zk::{ZkError, ZkResponse};

/// The reads `text` names, or `None` for an op that is neither.
pub(super) fn multi_read_ops(text: &str) -> Option<Vec<MultiReadOp>> {
    text.split(';')
        .filter(|op| !op.is_empty())
        .map(|op| match op.split_once(':')? {
            ("get", path) => Some(MultiReadOp::GetData { path: path.into() }),
            ("children", path) => Some(MultiReadOp::GetChildren { path: path.into() }),
            _ => None,
        })
        .collect()
}

/// One indented line per read: `  get data=D STAT`, `  children children=[…]` (sorted, as
/// the recorder compares them), `  err KIND`.
pub(super) fn multi_read_pieces(results: Vec<Result<ZkResponse, ZkError>>) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for result in results {
        pieces.push(Piece::Line);
        match result {
            Ok(ZkResponse::Data { data, stat }) => {
                pieces.push(Piece::Text(format!("  get data={data}")));
                pieces.push(Piece::Stat(stat));
            }
            Ok(ZkResponse::ChildNames { mut children }) => {
                children.sort();
                pieces.push(Piece::Text(format!(
                    "  children children={}",
                    list(&children)
                )));
            }
            Ok(other) => pieces.push(Piece::Text(format!("  {other:?}"))),
            Err(error) => pieces.push(Piece::Text(format!("  err {}", api_error_name(&error)))),
        }
    }
    pieces
}
