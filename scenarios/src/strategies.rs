//! proptest strategies for fault plans, so that a failing schedule shrinks to a minimal one.
//!
//! Shrinking removes faults and moves them earlier; a failing plan is reported by proptest
//! as the smallest schedule that still fails, ready to paste into a scripted test.

use proptest::{collection::vec, prelude::*};
use sim::{
    NodeId, Ratio, WorldConfig,
    fault::{Fault, FaultPlan, PartitionShape, ScheduledFault},
};

/// Any fault on the nodes of `config`, with bounded magnitudes.
pub fn fault(config: &WorldConfig) -> impl Strategy<Value = Fault> + Clone + use<> {
    let nodes: Vec<NodeId> = config.nodes().collect();
    let servers: Vec<NodeId> = (0..config.servers).map(NodeId::server).collect();
    let node = proptest::sample::select(nodes.clone());
    let server = proptest::sample::select(servers);
    let shape = prop_oneof![
        Just(PartitionShape::Halves),
        Just(PartitionShape::MajorityRing),
        Just(PartitionShape::Bridge),
        Just(PartitionShape::IsolateLeader),
        node.clone()
            .prop_map(|node| PartitionShape::IsolateNode { node: node.into() }),
    ];
    prop_oneof![
        shape.prop_map(|shape| Fault::Partition { shape }),
        Just(Fault::Heal),
        (server.clone(), server.clone())
            .prop_filter("a link joins two nodes", |(a, b)| a != b)
            .prop_map(|(from, to)| Fault::Clog { from, to }),
        (server.clone(), server.clone())
            .prop_filter("a link joins two nodes", |(a, b)| a != b)
            .prop_map(|(from, to)| Fault::Unclog { from, to }),
        (0u32..=30).prop_map(|percent| Fault::Loss {
            rate: Ratio::new(percent, 100)
        }),
        (0u32..=20).prop_map(|percent| Fault::Duplication {
            rate: Ratio::new(percent, 100)
        }),
        (1_000u64..=50_000).prop_map(|max_us| Fault::Latency {
            min_us: 1_000,
            max_us
        }),
        node.clone()
            .prop_map(|node| Fault::Crash { node: node.into() }),
        node.clone()
            .prop_map(|node| Fault::Restart { node: node.into() }),
        node.clone()
            .prop_map(|node| Fault::Pause { node: node.into() }),
        node.clone()
            .prop_map(|node| Fault::Resume { node: node.into() }),
        (node.clone(), -2_000i64..=2_000).prop_map(|(node, delta_ms)| Fault::ClockStep {
            node: node.into(),
            delta_ms
        }),
        (node, -100_000i32..=100_000).prop_map(|(node, drift_ppm)| Fault::ClockDrift {
            node: node.into(),
            drift_ppm
        }),
    ]
}

/// A plan of up to `max_faults` faults within the first `phase_ms` (the world heals
/// everything at the end of the phase, so a liveness phase follows).
pub fn fault_plan(
    config: &WorldConfig,
    max_faults: usize,
    phase_ms: u64,
) -> impl Strategy<Value = FaultPlan> + use<> {
    vec((0..phase_ms, fault(config)), 0..=max_faults).prop_map(move |faults| {
        FaultPlan::new(
            faults
                .into_iter()
                .map(|(at_ms, fault)| ScheduledFault::at(at_ms, fault))
                .collect(),
        )
    })
}
