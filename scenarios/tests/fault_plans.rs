//! Any fault plan runs to completion through the driver, fires every fault in order, ends in
//! a healed world where the workload finishes, and replays to the same history digest.

use proptest::prelude::*;
use scenarios::{Scenario, catalogue, driver, strategies::fault_plan, workload::Workload};
use sim::{
    Seed, WorldConfig,
    fault::{Fault, FaultPlan},
    history::{Event, FaultOutcome},
};

fn config() -> WorldConfig {
    WorldConfig {
        servers: 3,
        clients: 2,
        ..WorldConfig::default()
    }
}

/// The demo ledger on 3 servers and 2 clients, following `plan` (the world heals everything
/// at the end of the plan's phase; the run must then finish clean).
fn run(plan: &FaultPlan) -> scenarios::Outcome {
    let mut scenario: Scenario = catalogue::get("ledger").unwrap();
    scenario.servers = 3;
    scenario.clients = 2;
    scenario.fault_phase_ms = 3_000;
    if let Workload::Ledger(appends) = &mut scenario.workload {
        appends.appends_per_client = 20;
    }
    driver::run(&scenario.with_plan(plan.clone()), Seed::new(17))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_plan_fires_in_order_heals_and_replays(plan in fault_plan(&config(), 12, 3_000)) {
        let outcome = run(&plan);
        prop_assert!(outcome.is_clean(), "{}", outcome);
        let history = outcome.history.as_ref().unwrap();
        let records: Vec<_> = history
            .records()
            .iter()
            .filter_map(|record| match &record.event {
                Event::Fault(fault) => Some((record.at.as_millis(), fault)),
                _ => None,
            })
            .collect();
        let fired: Vec<_> = records.iter().map(|(at, f)| (*at, f.fault.clone())).collect();
        let planned: Vec<_> = plan.faults.iter().map(|f| (f.at_ms, f.fault.clone())).collect();
        prop_assert_eq!(fired, planned);
        let applied = |kind: fn(&Fault) -> bool| {
            records
                .iter()
                .filter(|(_, f)| kind(&f.fault) && matches!(f.outcome, FaultOutcome::Applied { .. }))
                .count() as u64
        };
        let skipped = records
            .iter()
            .filter(|(_, f)| matches!(f.outcome, FaultOutcome::Skipped { .. }))
            .count() as u64;
        let counts = &outcome.fault_counts;
        prop_assert_eq!(counts.skipped, skipped);
        prop_assert_eq!(counts.crashes, applied(|f| matches!(f, Fault::Crash { .. })));
        prop_assert_eq!(counts.pauses, applied(|f| matches!(f, Fault::Pause { .. })));
        prop_assert_eq!(counts.partitions, applied(|f| matches!(f, Fault::Partition { .. })));
        prop_assert_eq!(counts.clock_steps, applied(|f| matches!(f, Fault::ClockStep { .. })));
        prop_assert_eq!(counts.clogs, applied(|f| matches!(f, Fault::Clog { .. })));
        // Heal-all restarts and resumes whatever is down: every crash is followed by exactly
        // one restart, and every pause by one resume unless a crash ended it first.
        prop_assert_eq!(counts.restarts, counts.crashes);
        prop_assert!(counts.resumes <= counts.pauses);
        prop_assert_eq!(run(&plan).history_digest, outcome.history_digest);
    }
}
