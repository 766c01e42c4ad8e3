use models::zk::{ZkEnsemble, ZkEnsembleConfig};
use sim::{Seed, World, history::zk::CreateMode};
use std::time::Duration;

#[test]
fn smoke() {
    let outcome = World::builder()
        .seed(Seed::new(1))
        .servers(3)
        .clients(1)
        .time_limit(Duration::from_secs(30))
        .build()
        .unwrap()
        .run(|sim| async move {
            let ensemble = ZkEnsemble::new(&sim, ZkEnsembleConfig::new(sim.servers())).unwrap();
            ensemble.start(&sim);
            let node = sim.clients()[0];
            let context = sim.node(node);
            let done = sim.spawn(node, async move {
                let client = ensemble
                    .connect(&context, ensemble.client_config(0))
                    .await
                    .expect("connects");
                let path = client.create("/a", "x", CreateMode::Persistent).await;
                println!("create: {path:?}");
                let data = client.get_data("/a").await;
                println!("get: {data:?}");
                let (_, _, watch) = client.get_data_watch("/a").await.unwrap();
                let stat = client.set_data("/a", "y", Some(0)).await;
                println!("set: {stat:?}");
                println!("watch: {:?}", watch.fired().await);
                println!("sync: {:?}", client.sync("/").await);
                let seq = client
                    .create("/a/s-", "", CreateMode::EphemeralSequential)
                    .await;
                println!("seq: {seq:?}");
                println!("children: {:?}", client.get_children("/a").await);
            });
            done.await.unwrap();
        });
    for record in outcome.history.records() {
        println!("{} {:?} {:?}", record.at, record.node, record.event);
    }
    println!("{outcome}");
}
