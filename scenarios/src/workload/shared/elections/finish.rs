//! The finishing step's shared state: who won, what each observer saw last, and what the
//! final leaders' lookups found.

use super::ELECTION_NAME;
use crate::workload::Pending;
use sim::signal::Signal;
use std::{collections::BTreeMap, sync::Mutex};

/// The finishing step's shared state: who won, and what each observer saw last.
pub(super) struct Finish {
    observers: Vec<String>,
    state: Mutex<FinishState>,
    /// Set once every observer's latest observation is the winner.
    pub(super) everyone_observed: Signal,
    pending: Pending,
}

#[derive(Default)]
struct FinishState {
    /// The identity of the candidate that leads now, once one does.
    winner: Option<String>,
    /// Each observer's latest observation.
    seen: BTreeMap<String, Option<String>>,
    /// Leaders whose leader lookup named someone else.
    misnamed: Vec<String>,
}

impl Finish {
    /// Nobody has won yet; `observers` (`node/process`) must each see the winner.
    pub(super) fn new(observers: Vec<String>, pending: &Pending) -> Self {
        let finish = Self {
            observers,
            state: Mutex::new(FinishState::default()),
            everyone_observed: Signal::new(),
            pending: pending.clone(),
        };
        finish.note();
        finish
    }

    /// What the final leaders' lookups got wrong, if anything.
    pub(super) fn misnamed(&self) -> Vec<String> {
        self.state.lock().expect("not poisoned").misnamed.clone()
    }

    /// The candidate `identity` leads.
    pub(super) fn won(&self, identity: &str) {
        self.state.lock().expect("not poisoned").winner = Some(identity.to_string());
        self.check();
    }

    /// The candidate `identity` lost its leadership.
    pub(super) fn lost(&self, identity: &str) {
        let mut state = self.state.lock().expect("not poisoned");
        if state.winner.as_deref() == Some(identity) {
            state.winner = None;
        }
    }

    /// The leader `identity`'s lookup of who leads, before it resigned, found `found`.
    pub(super) fn looked_up(&self, identity: &str, found: Option<String>) {
        if found.as_deref() != Some(identity) {
            self.state
                .lock()
                .expect("not poisoned")
                .misnamed
                .push(format!(
                    "{identity} led, but its leader lookup found {found:?}"
                ));
        }
    }

    /// The observer `observer` reports `leader`.
    pub(super) fn observed(&self, observer: &str, leader: Option<String>) {
        self.state
            .lock()
            .expect("not poisoned")
            .seen
            .insert(observer.to_string(), leader);
        self.check();
    }

    /// Sets `everyone_observed` once every observer's latest observation is the winner.
    pub(super) fn check(&self) {
        let done = {
            let state = self.state.lock().expect("not poisoned");
            state.winner.is_some()
                && self
                    .observers
                    .iter()
                    .all(|observer| state.seen.get(observer) == Some(&state.winner))
        };
        if done {
            self.everyone_observed.set();
        }
        self.note();
    }

    fn note(&self) {
        let state = self.state.lock().expect("not poisoned");
        let note = match &state.winner {
            None => format!("no leader of {ELECTION_NAME} yet"),
            Some(winner) => {
                let behind: Vec<&str> = self
                    .observers
                    .iter()
                    .filter(|observer| state.seen.get(*observer) != Some(&state.winner))
                    .map(String::as_str)
                    .collect();
                format!(
                    "{} not yet observing the leader {winner} of {ELECTION_NAME}",
                    behind.join(", ")
                )
            }
        };
        self.pending.set(note);
    }
}
