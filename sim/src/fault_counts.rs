//! What a run's faults did, counted: faults fired and their inverses, and what they did to
//! messages and disks. Its own module because the nemesis that counts and the world state
//! that holds the counts both use it.

use crate::fault::FaultKind;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How many faults actually fired in a run, and what they did to messages and disks.
///
/// Suites assert on these: a suite whose faults never fire proves nothing. Each fault kind
/// has its own counter ([`FaultCounts::fired`]); inverses (heals, unclogs, restarts,
/// resumes, conditions restored) and the world's heal at the end of the fault phase are
/// counted apart, so that they can never pass for a fault that fired.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCounts {
    /// Partitions applied.
    pub partitions: u64,
    /// Partitions healed.
    pub heals: u64,
    /// Links clogged.
    pub clogs: u64,
    /// Links unclogged.
    pub unclogs: u64,
    /// Loss rate set to something other than the configured rate.
    pub loss_changes: u64,
    /// Latency range set to something other than the configured range.
    pub latency_changes: u64,
    /// Duplication rate set to something other than the configured rate.
    pub duplication_changes: u64,
    /// Network conditions set back to the configured ones.
    pub network_restores: u64,
    /// Nodes crashed.
    pub crashes: u64,
    /// Nodes restarted.
    pub restarts: u64,
    /// Nodes paused.
    pub pauses: u64,
    /// Nodes resumed.
    pub resumes: u64,
    /// Clock steps.
    pub clock_steps: u64,
    /// Clocks set drifting (a drift other than zero).
    pub clock_drifts: u64,
    /// Clocks set back to no drift.
    pub clock_drift_stops: u64,
    /// Heal-alls: the world's heal at the end of the fault phase, and any `heal_all` in a
    /// plan. Never a fault.
    pub heal_alls: u64,
    /// Faults that could not apply and changed nothing.
    pub skipped: u64,
    /// Messages put on the wire (datagrams and connection messages).
    pub messages_sent: u64,
    /// Datagrams lost to the loss rate.
    pub messages_dropped_loss: u64,
    /// Datagrams dropped by a partition or clog.
    pub messages_dropped_partition: u64,
    /// Datagrams sent to a crashed node, or queued for it when it crashed.
    pub messages_dropped_node_down: u64,
    /// Connection messages discarded because the connection broke.
    pub messages_dropped_broken_connection: u64,
    /// Datagrams delivered twice.
    pub messages_duplicated: u64,
    /// Connections broken by partitions, clogs and crashes.
    pub connections_broken: u64,
    /// Unsynced disk writes destroyed by crashes.
    pub unsynced_writes_lost: u64,
}

impl FaultCounts {
    /// Adds `other`'s counts to these (to total a sweep).
    pub fn accumulate(&mut self, other: &FaultCounts) {
        let FaultCounts {
            partitions,
            heals,
            clogs,
            unclogs,
            loss_changes,
            latency_changes,
            duplication_changes,
            network_restores,
            crashes,
            restarts,
            pauses,
            resumes,
            clock_steps,
            clock_drifts,
            clock_drift_stops,
            heal_alls,
            skipped,
            messages_sent,
            messages_dropped_loss,
            messages_dropped_partition,
            messages_dropped_node_down,
            messages_dropped_broken_connection,
            messages_duplicated,
            connections_broken,
            unsynced_writes_lost,
        } = other;
        self.partitions += partitions;
        self.heals += heals;
        self.clogs += clogs;
        self.unclogs += unclogs;
        self.loss_changes += loss_changes;
        self.latency_changes += latency_changes;
        self.duplication_changes += duplication_changes;
        self.network_restores += network_restores;
        self.crashes += crashes;
        self.restarts += restarts;
        self.pauses += pauses;
        self.resumes += resumes;
        self.clock_steps += clock_steps;
        self.clock_drifts += clock_drifts;
        self.clock_drift_stops += clock_drift_stops;
        self.heal_alls += heal_alls;
        self.skipped += skipped;
        self.messages_sent += messages_sent;
        self.messages_dropped_loss += messages_dropped_loss;
        self.messages_dropped_partition += messages_dropped_partition;
        self.messages_dropped_node_down += messages_dropped_node_down;
        self.messages_dropped_broken_connection += messages_dropped_broken_connection;
        self.messages_duplicated += messages_duplicated;
        self.connections_broken += connections_broken;
        self.unsynced_writes_lost += unsynced_writes_lost;
    }

    /// Total messages dropped for any reason.
    pub fn messages_dropped(&self) -> u64 {
        self.messages_dropped_loss
            + self.messages_dropped_partition
            + self.messages_dropped_node_down
            + self.messages_dropped_broken_connection
    }

    /// How many faults of `kind` took effect: the fault itself, never its inverse
    /// (`HealAll` is not a fault kind that fires; asking for it gives the heal-all count).
    pub fn fired(&self, kind: FaultKind) -> u64 {
        match kind {
            FaultKind::Partition => self.partitions,
            FaultKind::Clog => self.clogs,
            FaultKind::Loss => self.loss_changes,
            FaultKind::Latency => self.latency_changes,
            FaultKind::Duplication => self.duplication_changes,
            FaultKind::Crash => self.crashes,
            FaultKind::Pause => self.pauses,
            FaultKind::ClockStep => self.clock_steps,
            FaultKind::ClockDrift => self.clock_drifts,
            FaultKind::HealAll => self.heal_alls,
        }
    }

    /// Faults of every kind that took effect; inverses and heal-alls not included.
    pub fn faults_fired(&self) -> u64 {
        FaultKind::FAULTS.iter().map(|kind| self.fired(*kind)).sum()
    }
}

impl fmt::Display for FaultCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "partitions {} (healed {}), clogs {} (unclogged {}), crashes {} (restarted {}), \
             pauses {} (resumed {}), clock steps {}, drifts {} (stopped {}), loss {}, latency {}, \
             duplication {} (conditions restored {}); heal-alls {}, skipped {}",
            self.partitions,
            self.heals,
            self.clogs,
            self.unclogs,
            self.crashes,
            self.restarts,
            self.pauses,
            self.resumes,
            self.clock_steps,
            self.clock_drifts,
            self.clock_drift_stops,
            self.loss_changes,
            self.latency_changes,
            self.duplication_changes,
            self.network_restores,
            self.heal_alls,
            self.skipped
        )?;
        writeln!(
            f,
            "                 messages sent {}, dropped {} (loss {}, partition {}, node down {}, broken connection {}), \
             duplicated {}; connections broken {}; unsynced writes lost {}",
            self.messages_sent,
            self.messages_dropped(),
            self.messages_dropped_loss,
            self.messages_dropped_partition,
            self.messages_dropped_node_down,
            self.messages_dropped_broken_connection,
            self.messages_duplicated,
            self.connections_broken,
            self.unsynced_writes_lost
        )
    }
}
