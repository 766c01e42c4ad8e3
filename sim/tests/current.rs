//! Code written for production finds the world it runs in: the current world, the node
//! that runs the current task, and the services the scenario provided (what a drop-in
//! client's `connect` needs, having no `Sim` handed to it).

use sim::{NodeId, RunEnd, Seed, Sim, World};
use std::sync::{Arc, Mutex};

const C1: NodeId = NodeId::client(0);
const S2: NodeId = NodeId::server(1);

/// A stand-in for a store handle a scenario provides.
#[derive(Debug, PartialEq)]
struct Endpoints(Vec<NodeId>);

#[test]
fn a_task_finds_its_world_its_node_and_what_the_scenario_provided() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let outcome = {
        let seen = seen.clone();
        World::builder()
            .seed(Seed::new(5))
            .servers(2)
            .clients(1)
            .build()
            .unwrap()
            .run(move |sim| async move {
                let current = Sim::current().expect("a run has a current world");
                assert_eq!(current.seed(), sim.seed());
                assert!(
                    Sim::current_node().is_none(),
                    "the scenario's task runs on no world node"
                );
                assert!(sim.service::<Endpoints>().is_none(), "nothing provided yet");
                sim.provide(Endpoints(vec![NodeId::server(0)]));
                sim.provide(Endpoints(sim.servers()));
                for node in [C1, S2] {
                    let seen = seen.clone();
                    sim.spawn(node, async move {
                        let context = Sim::current_node().expect("a task on a world node");
                        let endpoints = Sim::current()
                            .and_then(|sim| sim.service::<Endpoints>())
                            .expect("the provided endpoints");
                        seen.lock().unwrap().push(format!(
                            "{} sees {:?}",
                            context.id(),
                            endpoints.0
                        ));
                    })
                    .await
                    .unwrap();
                }
            })
    };
    assert!(
        matches!(outcome.end, RunEnd::Completed { .. }),
        "the run completed"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        ["c1 sees [s1, s2]", "s2 sees [s1, s2]"],
        "each task names its own node; the second provide replaced the first"
    );
    assert!(Sim::current().is_none(), "no world after the run is over");
}
