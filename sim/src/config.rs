//! World configuration and its validation.
//!
//! A config that cannot be (no servers, a reversed latency range, a loss rate above one, a
//! fault naming a node that does not exist) is rejected with a [`ConfigError`] naming the
//! field, never a panic.

pub use crate::config_error::ConfigError;
use crate::{
    config_error::{check_drift, check_probability, check_range_us},
    fault::{FaultSource, FaultWorld},
    node::{NodeId, NodeKind},
    ratio::Ratio,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The largest number of servers a world may have.
pub const MAX_SERVERS: usize = 15;
/// The largest number of clients a world may have.
pub const MAX_CLIENTS: usize = 1024;

/// The largest number of resource nodes a world may have.
pub const MAX_RESOURCES: usize = 16;

/// Everything about a world except its seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldConfig {
    /// Number of server nodes, `s1..sN`.
    pub servers: usize,
    /// Number of client nodes, `c1..cM`.
    #[serde(default)]
    pub clients: usize,
    /// Number of resource nodes, `r1..rK` (e.g. a fenced resource lock holders write to).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub resources: usize,
    /// Network conditions at the start of the run.
    #[serde(default)]
    pub network: NetworkConfig,
    /// Disk timing.
    #[serde(default)]
    pub disk: DiskConfig,
    /// Clock skew at the start of the run.
    #[serde(default)]
    pub clocks: ClockConfig,
    /// Where faults come from.
    #[serde(default)]
    pub faults: FaultSource,
    /// Faults fire within the first `fault_phase_ms` (generated plans fill it; an explicit
    /// plan's phase lasts at least until its last fault's effect ends). At the end of the
    /// phase the world heals everything: partitions, clogs, network conditions, crashed
    /// and paused nodes, clock drift.
    #[serde(default)]
    pub fault_phase_ms: u64,
    /// The run stops (with [`crate::RunEnd::TimeLimit`]) at this simulated time.
    #[serde(default = "default_time_limit_ms")]
    pub time_limit_ms: u64,
}

fn is_zero_count(count: &usize) -> bool {
    *count == 0
}

fn default_time_limit_ms() -> u64 {
    120_000
}

impl Default for WorldConfig {
    fn default() -> Self {
        Self {
            servers: 3,
            clients: 0,
            resources: 0,
            network: NetworkConfig::default(),
            disk: DiskConfig::default(),
            clocks: ClockConfig::default(),
            faults: FaultSource::None,
            fault_phase_ms: 0,
            time_limit_ms: default_time_limit_ms(),
        }
    }
}

/// Network conditions. Faults may change them during the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// Smallest one-way latency, microseconds.
    pub latency_min_us: u64,
    /// Largest one-way latency, microseconds.
    pub latency_max_us: u64,
    /// Probability that a datagram is lost.
    pub loss: Ratio,
    /// Probability that a datagram is delivered twice.
    pub duplication: Ratio,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            latency_min_us: 1_000,
            latency_max_us: 10_000,
            loss: Ratio::ZERO,
            duplication: Ratio::ZERO,
        }
    }
}

/// Disk timing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiskConfig {
    /// Smallest time a sync takes, microseconds.
    pub sync_latency_min_us: u64,
    /// Largest time a sync takes, microseconds.
    pub sync_latency_max_us: u64,
}

impl Default for DiskConfig {
    fn default() -> Self {
        Self {
            sync_latency_min_us: 100,
            sync_latency_max_us: 2_000,
        }
    }
}

/// Initial clock skew. Each node's clock starts ahead of global time by a random offset up
/// to `max_initial_offset_ms` and drifts by a random rate within ±`max_drift_ppm`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockConfig {
    /// Largest initial offset, milliseconds.
    pub max_initial_offset_ms: u64,
    /// Largest initial drift, parts per million.
    pub max_drift_ppm: u32,
}

impl Default for ClockConfig {
    fn default() -> Self {
        Self {
            max_initial_offset_ms: 1_000,
            max_drift_ppm: 100,
        }
    }
}

impl WorldConfig {
    /// Checks that the world can be built.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.servers == 0 || self.servers > MAX_SERVERS {
            return Err(ConfigError::new(
                "servers",
                format!("{} servers (expected 1..={MAX_SERVERS})", self.servers),
            ));
        }
        if self.clients > MAX_CLIENTS {
            return Err(ConfigError::new(
                "clients",
                format!("{} clients (expected 0..={MAX_CLIENTS})", self.clients),
            ));
        }
        if self.resources > MAX_RESOURCES {
            return Err(ConfigError::new(
                "resources",
                format!(
                    "{} resources (expected 0..={MAX_RESOURCES})",
                    self.resources
                ),
            ));
        }
        check_range_us(
            "network.latency_min_us..network.latency_max_us",
            self.network.latency_min_us,
            self.network.latency_max_us,
        )?;
        check_probability("network.loss", self.network.loss)?;
        check_probability("network.duplication", self.network.duplication)?;
        check_range_us(
            "disk.sync_latency_min_us..disk.sync_latency_max_us",
            self.disk.sync_latency_min_us,
            self.disk.sync_latency_max_us,
        )?;
        check_drift("clocks.max_drift_ppm", i64::from(self.clocks.max_drift_ppm))?;
        if self.clocks.max_initial_offset_ms > 86_400_000 {
            return Err(ConfigError::new(
                "clocks.max_initial_offset_ms",
                format!(
                    "{} ms is more than a day",
                    self.clocks.max_initial_offset_ms
                ),
            ));
        }
        if self.time_limit_ms == 0 {
            return Err(ConfigError::new(
                "time_limit_ms",
                "0 ms (expected a positive limit)",
            ));
        }
        let generated = !matches!(self.faults, FaultSource::None | FaultSource::Plan(_));
        if generated && self.fault_phase_ms == 0 {
            return Err(ConfigError::new(
                "fault_phase_ms",
                "0 ms with generated faults (expected a positive fault phase to generate them in)",
            ));
        }
        if self.fault_phase_ms >= self.time_limit_ms {
            return Err(ConfigError::new(
                "fault_phase_ms",
                format!(
                    "{} ms is not before the time limit of {} ms (expected a fault phase that ends before the run must)",
                    self.fault_phase_ms, self.time_limit_ms
                ),
            ));
        }
        self.faults.validate("faults", self)
    }

    /// Whether `node` exists in this world.
    pub fn contains(&self, node: NodeId) -> bool {
        match node.kind() {
            NodeKind::Server => node.ordinal() < self.servers,
            NodeKind::Client => node.ordinal() < self.clients,
            NodeKind::Resource => node.ordinal() < self.resources,
        }
    }

    /// The time limit as a duration.
    pub fn time_limit(&self) -> Duration {
        Duration::from_millis(self.time_limit_ms)
    }

    /// Every node: servers, then clients, then resources.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.servers)
            .map(NodeId::server)
            .chain((0..self.clients).map(NodeId::client))
            .chain((0..self.resources).map(NodeId::resource))
    }
}

impl FaultWorld for WorldConfig {
    fn servers(&self) -> usize {
        self.servers
    }

    fn clients(&self) -> usize {
        self.clients
    }

    fn contains(&self, node: NodeId) -> bool {
        WorldConfig::contains(self, node)
    }

    fn configured_loss(&self) -> Ratio {
        self.network.loss
    }

    fn configured_duplication(&self) -> Ratio {
        self.network.duplication
    }

    fn configured_latency_us(&self) -> (u64, u64) {
        (self.network.latency_min_us, self.network.latency_max_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_field(config: &WorldConfig) -> String {
        config.validate().unwrap_err().field
    }

    #[test]
    fn default_is_valid() {
        WorldConfig::default().validate().unwrap();
    }

    #[test]
    fn impossible_configs_name_their_field() {
        let mut config = WorldConfig {
            servers: 0,
            ..WorldConfig::default()
        };
        assert_eq!(error_field(&config), "servers");
        config.servers = 3;
        config.network.latency_min_us = 10;
        config.network.latency_max_us = 5;
        assert!(error_field(&config).contains("latency"));
        config.network.latency_max_us = 10;
        config.network.loss = Ratio::new(3, 2);
        assert_eq!(error_field(&config), "network.loss");
        config.network.loss = Ratio::new(1, 0);
        assert_eq!(error_field(&config), "network.loss");
        config.network.loss = Ratio::ZERO;
        config.clocks.max_drift_ppm = 2_000_000;
        assert_eq!(error_field(&config), "clocks.max_drift_ppm");
        config.clocks.max_drift_ppm = 0;
        config.time_limit_ms = 0;
        assert_eq!(error_field(&config), "time_limit_ms");
    }

    #[test]
    fn parses_from_json_and_rejects_unknown_fields() {
        let config: WorldConfig =
            serde_json::from_str(r#"{"servers": 5, "clients": 2, "network": {"loss": "1/100"}}"#)
                .unwrap();
        assert_eq!(config.servers, 5);
        assert_eq!(config.network.loss, Ratio::new(1, 100));
        assert_eq!(config.network.latency_max_us, 10_000);
        let error = serde_json::from_str::<WorldConfig>(r#"{"servers": 5, "severs": 2}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("severs"), "{error}");
    }
}
