//! `cN watch KEY [prefix] [rev=R] as=wK`, `cN next wK [within_ms=N]`, `cN cancel wK`: one
//! watch stream per watch role.

use super::{NEXT_DEFAULT_MS, Run, error, kv};
use crate::Failure;
use etcd_client::{Client, EventType, WatchOptions, WatchStream};
use probe_format::{Roles, Step};
use std::{collections::VecDeque, time::Duration};

/// A watch opened by `cN watch … as=wK`.
pub(super) struct Watch {
    stream: WatchStream,
    watch_id: i64,
    /// Lines received and not yet handed out: `next` hands out one per step, so that how the
    /// server batches events into responses does not show.
    lines: VecDeque<String>,
}

impl Run {
    pub(super) async fn watch_step(
        &mut self,
        client: &mut Client,
        step: &Step,
        verb: &str,
    ) -> Result<Vec<String>, Failure> {
        let role = match verb {
            "watch" => step
                .named("as")
                .ok_or_else(|| Failure::bad_step(step, "as", "`as=wK`, the watch's role"))?,
            _ => step.arg(0),
        };
        if verb == "watch" {
            let mut options = WatchOptions::new();
            if step.flag("prefix") {
                options = options.with_prefix();
            }
            if let Some(rev) = step.named_int("rev") {
                options = options.with_start_revision(rev);
            }
            let stream = match client.watch(step.arg(0), Some(options)).await {
                Ok(stream) => stream,
                Err(e) => return Ok(error(&e)),
            };
            // The first response says the watch is created and names it.
            let mut watch = Watch {
                watch_id: -1,
                stream,
                lines: VecDeque::new(),
            };
            match watch.stream.message().await {
                Ok(Some(response)) => {
                    watch.watch_id = response.watch_id();
                    watch.take(&response, &mut self.leases);
                }
                Ok(None) => return Ok(vec!["err Other (watch stream closed)".to_string()]),
                Err(e) => return Ok(error(&e)),
            }
            self.watches.retain(|(r, _)| r != role);
            self.watches.push((role.to_string(), watch));
            return Ok(vec!["ok".to_string()]);
        }
        let Some(index) = self.watches.iter().position(|(r, _)| r == role) else {
            return Err(Failure::bad_step(
                step,
                "watch",
                format!("a watch opened with `as={role}` before"),
            ));
        };
        let watch = &mut self.watches[index].1;
        if verb == "cancel" {
            return Ok(match watch.stream.cancel(watch.watch_id).await {
                Ok(()) => vec!["ok".to_string()],
                Err(e) => error(&e),
            });
        }
        let within =
            Duration::from_millis(step.named_int("within_ms").unwrap_or(NEXT_DEFAULT_MS) as u64);
        let deadline = tokio::time::Instant::now() + within;
        while watch.lines.is_empty() {
            match tokio::time::timeout_at(deadline, watch.stream.message()).await {
                Ok(Ok(Some(response))) => watch.take(&response, &mut self.leases),
                Ok(Ok(None)) => watch
                    .lines
                    .push_back("err Other (watch stream closed)".to_string()),
                Ok(Err(e)) => watch.lines.extend(error(&e)),
                Err(_) => return Ok(vec!["none".to_string()]),
            }
        }
        Ok(vec![watch.lines.pop_front().expect("not empty")])
    }
}

impl Watch {
    /// Queues a response's lines: `put KV` / `delete KEY mod=R` per event, then
    /// `err compacted compact_rev=R` when the start revision was compacted, or `canceled`.
    fn take(&mut self, response: &etcd_client::WatchResponse, leases: &mut Roles) {
        for event in response.events() {
            let Some(pair) = event.kv() else { continue };
            self.lines.push_back(match event.event_type() {
                EventType::Put => format!("put {}", kv(pair, leases)),
                EventType::Delete => format!(
                    "delete {} mod={}",
                    String::from_utf8_lossy(pair.key()),
                    pair.mod_revision()
                ),
            });
        }
        if response.compact_revision() > 0 {
            self.lines.push_back(format!(
                "err compacted compact_rev={}",
                response.compact_revision()
            ));
        } else if response.canceled() {
            self.lines.push_back("canceled".to_string());
        }
    }
}
