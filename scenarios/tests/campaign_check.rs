//! The switch for what the Raft store's election service does after a campaign's wait
//! (`tuning.campaign_check`, etcd-io/etcd#11051 and its fix #22387) reads from a scenario
//! file, refuses an unknown value by name, and stays out of a scenario that does not set it
//! (so that no catalogue scenario's serialized form, and digest, changes).

use scenarios::{
    Scenario,
    scenario::{CampaignCheck, Format, Tuning},
};

const SCENARIO: &str = r#"name = "switch"
store = "raft"
servers = 3
clients = 2
fault_phase_ms = 4000
liveness_bound_ms = 10000
[tuning]
campaign_check = "CHECK"
[workload]
kind = "kv_mix"
"#;

#[test]
fn a_scenario_file_switches_the_campaign_check() {
    let fixed = Scenario::parse(&SCENARIO.replace("CHECK", "recheck_own_key"), Format::Toml);
    let fixed = fixed.expect("a valid scenario");
    assert_eq!(
        fixed.tuning.campaign_check,
        Some(CampaignCheck::RecheckOwnKey)
    );
    let upstream = Scenario::parse(&SCENARIO.replace("CHECK", "upstream"), Format::Toml);
    let upstream = upstream.expect("a valid scenario");
    assert_eq!(
        upstream.tuning.campaign_check,
        Some(CampaignCheck::Upstream)
    );
}

#[test]
fn an_unknown_campaign_check_is_refused_by_name() {
    let error = Scenario::parse(&SCENARIO.replace("CHECK", "sometimes"), Format::Toml)
        .expect_err("not a campaign check");
    let message = error.to_string();
    assert!(message.contains("campaign_check"), "{message}");
    assert!(message.contains("sometimes"), "{message}");
}

#[test]
fn an_unset_campaign_check_is_not_serialized() {
    let json = serde_json::to_string(&Tuning::default()).unwrap();
    assert!(!json.contains("campaign_check"), "{json}");
}
