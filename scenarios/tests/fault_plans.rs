//! Any fault plan runs to completion, fires every fault in order, leaves a healed world, and
//! replays to the same history digest.

use proptest::prelude::*;
use scenarios::strategies::fault_plan;
use sim::{
    Seed, World, WorldConfig,
    demo::{DemoWorkload, ledger_scenario},
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

fn run(plan: &FaultPlan) -> sim::RunOutcome {
    World::builder()
        .config(config())
        .seed(Seed::new(17))
        .fault_plan(plan.clone())
        .build()
        .expect("generated plans are valid")
        .run(|sim| async move {
            ledger_scenario(
                sim.clone(),
                DemoWorkload {
                    appends_per_client: 20,
                },
            )
            .await;
            for node in sim.servers().into_iter().chain(sim.clients()) {
                assert!(
                    !sim.is_crashed(node) && !sim.is_paused(node),
                    "{node} not healed"
                );
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_plan_fires_in_order_heals_and_replays(plan in fault_plan(&config(), 12, 3_000)) {
        let outcome = run(&plan);
        let completed = matches!(outcome.end, sim::RunEnd::Completed { .. });
        prop_assert!(completed, "the run hit its time limit");
        let records: Vec<_> = outcome
            .history
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
        prop_assert_eq!(run(&plan).history_digest(), outcome.history_digest());
    }
}
