//! Building a world and running a scenario in it.

mod sim;
pub(crate) mod state;

pub use sim::{HistoryRecorder, NodeContext, Sim};

use crate::{
    config::{ConfigError, WorldConfig},
    digest::Digest,
    fault::{FaultPlan, FaultSource, SwarmConfig},
    fault_counts::FaultCounts,
    history::{Event, History, PhaseEvent},
    nemesis,
    node::NodeId,
    ratio::Ratio,
    report::FailureReport,
    seed::Seed,
    time::SimTime,
};
use serde::{Deserialize, Serialize};
use state::WorldShared;
use std::{fmt, future::Future, ops::RangeInclusive, time::Duration};

/// A world ready to run: a seed, a validated config, and the fault plan it implies.
///
/// ```no_run
/// # use sim::{World, Seed};
/// let outcome = World::builder()
///     .seed(Seed::new(42))
///     .servers(3)
///     .clients(1)
///     .build()
///     .expect("a valid world")
///     .run(|sim| async move {
///         sim.sleep(std::time::Duration::from_secs(1)).await;
///     });
/// println!("{outcome}");
/// ```
#[derive(Clone, Debug)]
pub struct World {
    seed: Seed,
    config: WorldConfig,
    plan: FaultPlan,
    report: FailureReport,
}

/// How many worlds built on this thread are still in memory: 0 outside a run once every
/// earlier run's world has been freed. A diagnostic for leaks (a world that outlives its
/// run keeps its history buffers, network queues and tasks alive).
pub fn live_worlds() -> usize {
    state::live_worlds()
}

impl World {
    /// Starts describing a world.
    pub fn builder() -> WorldBuilder {
        WorldBuilder::default()
    }

    /// A world from a seed and a config; generates the fault plan if the config asks.
    pub fn new(seed: Seed, config: WorldConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let plan = config
            .faults
            .plan(&config, config.fault_phase_ms, &mut seed.stream("faults"));
        let report = FailureReport::new(seed, "custom world");
        Ok(Self {
            seed,
            config,
            plan,
            report,
        })
    }

    /// Names the scenario and the command that replays it, for the failure report.
    pub fn described_as(
        mut self,
        scenario: impl Into<String>,
        replay_command: impl Into<String>,
    ) -> Self {
        self.report = FailureReport::new(self.seed, scenario).with_command(replay_command);
        self
    }

    /// The seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }

    /// The configuration.
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// The fault plan the run will follow.
    pub fn fault_plan(&self) -> &FaultPlan {
        &self.plan
    }

    /// Runs `scenario` until it finishes or the time limit is reached.
    ///
    /// The scenario gets a [`Sim`] to start node programs, spawn client tasks, inject faults
    /// by hand and wait for the fault phase to end. Meanwhile the fault plan runs. If the run
    /// panics (a model assertion, a scenario assertion), the failure report with the seed
    /// and replay command is printed before the panic continues.
    pub fn run<S, F>(self, scenario: S) -> RunOutcome
    where
        S: FnOnce(Sim) -> F,
        F: Future<Output = ()> + 'static,
    {
        let World {
            seed,
            config,
            plan,
            report,
        } = self;
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed.value(), madsim::Config::default());
        let run = std::panic::AssertUnwindSafe(|| {
            runtime.block_on(run_world(seed, config, plan, scenario))
        });
        match std::panic::catch_unwind(run) {
            Ok(outcome) => outcome,
            Err(panic) => {
                eprintln!("{report}");
                std::panic::resume_unwind(panic)
            }
        }
    }
}

async fn run_world<S, F>(
    seed: Seed,
    config: WorldConfig,
    plan: FaultPlan,
    scenario: S,
) -> RunOutcome
where
    S: FnOnce(Sim) -> F,
    F: Future<Output = ()> + 'static,
{
    let world = WorldShared::create(seed, config.clone());
    world.record(None, Event::Phase(PhaseEvent::Started { seed }));
    let phase_end_ms = config.fault_phase_ms.max(plan.end_ms());
    let nemesis_task =
        madsim::task::spawn_local(nemesis::run_plan(world.clone(), plan.clone(), phase_end_ms));
    let sim = Sim {
        world: world.clone(),
    };
    let finished = madsim::time::timeout(config.time_limit(), scenario(sim)).await;
    let at = world.now();
    let end = match finished {
        Ok(()) => {
            world.record(None, Event::Phase(PhaseEvent::Completed));
            RunEnd::Completed { at }
        }
        Err(_) => {
            world.record(None, Event::Phase(PhaseEvent::TimeLimitReached));
            RunEnd::TimeLimit { at }
        }
    };
    nemesis_task.abort();
    world.forget_programs_and_services();
    let (history, fault_counts, marks) = {
        let mut state = world.state.lock();
        (
            History::from_records(std::mem::take(&mut state.history)),
            state.counts.clone(),
            std::mem::take(&mut state.marks),
        )
    };
    world.stop_every_node();
    RunOutcome {
        seed,
        config,
        fault_plan: plan,
        history,
        fault_counts,
        marks,
        end,
    }
}

/// Describes a world, step by step. Every setter reads as part of a sentence:
/// `World::builder().seed(s).servers(5).clients(2).packet_loss(Ratio::new(1, 100)).build()`.
#[derive(Clone, Debug, Default)]
pub struct WorldBuilder {
    seed: Seed,
    config: WorldConfig,
}

impl WorldBuilder {
    /// Uses this seed.
    pub fn seed(mut self, seed: Seed) -> Self {
        self.seed = seed;
        self
    }

    /// Starts from a whole config.
    pub fn config(mut self, config: WorldConfig) -> Self {
        self.config = config;
        self
    }

    /// With `count` servers.
    pub fn servers(mut self, count: usize) -> Self {
        self.config.servers = count;
        self
    }

    /// With `count` clients.
    pub fn clients(mut self, count: usize) -> Self {
        self.config.clients = count;
        self
    }

    /// With `count` resource nodes.
    pub fn resources(mut self, count: usize) -> Self {
        self.config.resources = count;
        self
    }

    /// With one-way latencies drawn from `range`.
    pub fn latency(mut self, range: RangeInclusive<Duration>) -> Self {
        self.config.network.latency_min_us = micros(*range.start());
        self.config.network.latency_max_us = micros(*range.end());
        self
    }

    /// Losing datagrams with probability `rate`.
    pub fn packet_loss(mut self, rate: Ratio) -> Self {
        self.config.network.loss = rate;
        self
    }

    /// Duplicating datagrams with probability `rate`.
    pub fn duplication(mut self, rate: Ratio) -> Self {
        self.config.network.duplication = rate;
        self
    }

    /// With disk syncs taking a time in `range`.
    pub fn disk_sync_latency(mut self, range: RangeInclusive<Duration>) -> Self {
        self.config.disk.sync_latency_min_us = micros(*range.start());
        self.config.disk.sync_latency_max_us = micros(*range.end());
        self
    }

    /// With clocks starting up to `max_offset` apart and drifting up to `max_drift_ppm`.
    pub fn clock_skew(mut self, max_offset: Duration, max_drift_ppm: u32) -> Self {
        self.config.clocks.max_initial_offset_ms =
            u64::try_from(max_offset.as_millis()).unwrap_or(u64::MAX);
        self.config.clocks.max_drift_ppm = max_drift_ppm;
        self
    }

    /// Following an explicit fault plan.
    pub fn fault_plan(mut self, plan: FaultPlan) -> Self {
        self.config.faults = FaultSource::Plan(plan);
        self
    }

    /// With a fault plan generated from the seed.
    pub fn swarm_faults(self, swarm: SwarmConfig) -> Self {
        self.faults(FaultSource::Swarm(swarm))
    }

    /// With faults from `source` (generated ones over the fault phase).
    pub fn faults(mut self, source: FaultSource) -> Self {
        self.config.faults = source;
        self
    }

    /// With faults firing within the first `phase` (then the world heals everything).
    pub fn fault_phase(mut self, phase: Duration) -> Self {
        self.config.fault_phase_ms = u64::try_from(phase.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Stopping at `limit` of simulated time.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.config.time_limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Validates the description and builds the world.
    pub fn build(self) -> Result<World, ConfigError> {
        World::new(self.seed, self.config)
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum RunEnd {
    /// The scenario finished.
    Completed {
        /// When.
        at: SimTime,
    },
    /// The time limit was reached first.
    TimeLimit {
        /// When.
        at: SimTime,
    },
}

/// What a run produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The seed.
    pub seed: Seed,
    /// The configuration.
    pub config: WorldConfig,
    /// The fault plan that was followed.
    pub fault_plan: FaultPlan,
    /// Everything that happened.
    pub history: History,
    /// Faults that actually fired.
    pub fault_counts: FaultCounts,
    /// Coverage marks reached in model code ([`crate::coverage`]).
    #[serde(default)]
    pub marks: crate::coverage::Marks,
    /// How the run ended.
    pub end: RunEnd,
}

impl RunOutcome {
    /// The history's stable digest.
    pub fn history_digest(&self) -> Digest {
        self.history.digest()
    }

    /// Simulated time at the end of the run.
    pub fn ended_at(&self) -> SimTime {
        match self.end {
            RunEnd::Completed { at } | RunEnd::TimeLimit { at } => at,
        }
    }

    /// Nodes of the run.
    pub fn nodes(&self) -> Vec<NodeId> {
        self.config.nodes().collect()
    }
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed:            {} ({})", self.seed, self.seed.value())?;
        writeln!(
            f,
            "world:           {} servers, {} clients, latency {}..={} us, loss {}, duplication {}",
            self.config.servers,
            self.config.clients,
            self.config.network.latency_min_us,
            self.config.network.latency_max_us,
            self.config.network.loss,
            self.config.network.duplication
        )?;
        let end = match self.end {
            RunEnd::Completed { at } => format!("completed at {at}"),
            RunEnd::TimeLimit { at } => format!("time limit reached at {at}"),
        };
        writeln!(f, "end:             {end}")?;
        writeln!(
            f,
            "history:         {} records, digest {}",
            self.history.len(),
            self.history_digest()
        )?;
        if self.fault_plan.faults.is_empty() {
            writeln!(f, "fault plan:      none")?;
        } else {
            write!(
                f,
                "fault plan:      {} faults; ",
                self.fault_plan.faults.len()
            )?;
            write!(f, "{}", self.fault_plan)?;
        }
        write!(f, "faults fired:    {}", self.fault_counts)?;
        Ok(())
    }
}
