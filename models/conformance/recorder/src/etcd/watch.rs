//! `cN watch KEY [prefix] [rev=R] [prev_kv] [no_put] [no_delete] [progress_notify] as=wK`,
//! `cN next wK [within_ms=N]`, `cN progress wK`, `cN cancel wK`: one watch stream per watch
//! role.

use super::{NEXT_DEFAULT_MS, Run, error, kv};
use crate::Failure;
use etcd_client::{Client, EventType, WatchFilterType, WatchOptions, WatchStream};
use probe_format::{Roles, Step};
use std::{collections::VecDeque, time::Duration};

/// A watch opened by `cN watch … as=wK`.
pub(super) struct Watch {
    stream: WatchStream,
    watch_id: i64,
    /// Events received and not yet handed out, each as its lines (`put KV`, then `  prev KV`
    /// with `prev_kv`): `next` hands out one per step, so that how the server batches events
    /// into responses does not show.
    events: VecDeque<Vec<String>>,
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
            if step.flag("prev_kv") {
                options = options.with_prev_key();
            }
            if step.flag("progress_notify") {
                options = options.with_progress_notify();
            }
            let filters: Vec<WatchFilterType> = [
                ("no_put", WatchFilterType::NoPut),
                ("no_delete", WatchFilterType::NoDelete),
            ]
            .into_iter()
            .filter(|(flag, _)| step.flag(flag))
            .map(|(_, filter)| filter)
            .collect();
            if !filters.is_empty() {
                options = options.with_filters(filters);
            }
            let stream = match client.watch(step.arg(0), Some(options)).await {
                Ok(stream) => stream,
                Err(e) => return Ok(error(&e)),
            };
            // The first response says the watch is created and names it.
            let mut watch = Watch {
                watch_id: -1,
                stream,
                events: VecDeque::new(),
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
        if verb == "progress" {
            return Ok(match watch.stream.request_progress().await {
                Ok(()) => vec!["ok".to_string()],
                Err(e) => error(&e),
            });
        }
        if verb == "cancel" {
            return Ok(match watch.stream.cancel(watch.watch_id).await {
                Ok(()) => vec!["ok".to_string()],
                Err(e) => error(&e),
            });
        }
        let within =
            Duration::from_millis(step.named_int("within_ms").unwrap_or(NEXT_DEFAULT_MS) as u64);
        let deadline = tokio::time::Instant::now() + within;
        while watch.events.is_empty() {
            match tokio::time::timeout_at(deadline, watch.stream.message()).await {
                Ok(Ok(Some(response))) => watch.take(&response, &mut self.leases),
                Ok(Ok(None)) => watch
                    .events
                    .push_back(vec!["err Other (watch stream closed)".to_string()]),
                Ok(Err(e)) => watch.events.push_back(error(&e)),
                Err(_) => return Ok(vec!["none".to_string()]),
            }
        }
        Ok(watch.events.pop_front().expect("not empty"))
    }
}

impl Watch {
    /// Queues a response's events: `put KV` / `delete KEY mod=R` per event (and `  prev KV`
    /// when the event carries its key's previous value), then `err compacted compact_rev=R`
    /// when the start revision was compacted, or `canceled`.
    fn take(&mut self, response: &etcd_client::WatchResponse, leases: &mut Roles) {
        for event in response.events() {
            let Some(pair) = event.kv() else { continue };
            let mut lines = vec![match event.event_type() {
                EventType::Put => format!("put {}", kv(pair, leases)),
                EventType::Delete => format!(
                    "delete {} mod={}",
                    String::from_utf8_lossy(pair.key()),
                    pair.mod_revision()
                ),
            }];
            if let Some(prev) = event.prev_kv() {
                lines.push(format!("  prev {}", kv(prev, leases)));
            }
            self.events.push_back(lines);
        }
        if response.compact_revision() > 0 {
            self.events.push_back(vec![format!(
                "err compacted compact_rev={}",
                response.compact_revision()
            )]);
        } else if response.canceled() {
            self.events.push_back(vec!["canceled".to_string()]);
        } else if response.events().is_empty() && !response.created() {
            // An empty response: a progress notification or the answer to a progress request.
            let revision = response.header().map_or(0, |header| header.revision());
            self.events
                .push_back(vec![format!("progress rev={revision}")]);
        }
    }
}
