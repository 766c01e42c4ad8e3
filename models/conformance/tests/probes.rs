//! Every conformance probe against the models: each step's answer must be the real server's
//! (recorded in the probe file) or the probe's declared deviation. A disagreement fails with
//! the step's diff; the agreement figures are printed either way (`--nocapture`).

use conformance::{PROBE_SEED, judge, judge_committed, probes_dir, run};
use probe_format::{Probe, Store};
use std::path::Path;

/// Issue 24 asks for at least this many probes per store.
const MINIMUM_PROBES: usize = 60;

fn check(store: Store) {
    let judgement = judge_committed(store).unwrap_or_else(|e| panic!("{e}"));
    let tally = &judgement.tally;
    println!(
        "{}: {} probes, {} steps: {} agree, {} declared deviations, {} differ",
        store.name(),
        tally.probes,
        tally.steps,
        tally.agree,
        tally.declared,
        tally.differ
    );
    assert!(
        judgement.failures.is_empty(),
        "{} of {} {} steps disagree with the real server:\n{}",
        tally.differ,
        tally.steps,
        store.name(),
        judgement.failures.join("\n")
    );
    assert!(
        tally.probes >= MINIMUM_PROBES,
        "{} has {} probes; the suite wants at least {MINIMUM_PROBES}",
        store.name(),
        tally.probes
    );
    assert_eq!(
        tally.agree + tally.declared,
        tally.steps,
        "every step judged"
    );
}

#[test]
fn zookeeper_probes_agree_with_the_real_server() {
    check(Store::Zk);
}

#[test]
fn etcd_probes_agree_with_the_real_server() {
    check(Store::Etcd);
}

/// A probe's answers do not depend on the seed: nothing races in a probe, so a second seed
/// gives the same answers (a model whose answers did would make the suite flaky).
#[test]
fn answers_do_not_depend_on_the_seed() {
    for store in [Store::Zk, Store::Etcd] {
        let first = judge(&probes_dir(), store, PROBE_SEED).unwrap_or_else(|e| panic!("{e}"));
        let second = judge(&probes_dir(), store, PROBE_SEED + 1).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.tally, second.tally, "{}", store.name());
        assert_eq!(first.failures, second.failures, "{}", store.name());
    }
}

/// The suite can fail: a recorded answer changed by one character is a disagreement, shown
/// as a diff of the step.
#[test]
fn a_changed_answer_is_a_diff_of_the_step() {
    let text = "# about: a test\n\nc1 connect\n----\nok session=s1 timeout_ms=6000\n\nc1 create /a data=x\n----\nok path=/b\n";
    let probe = Probe::parse("probes/zk/t.probe", "t", Store::Zk, text).unwrap();
    let answers = run(&probe, PROBE_SEED).unwrap();
    assert_eq!(
        probe.steps[0].compare(&answers[0]),
        probe_format::Agreement::Agrees
    );
    let differs = probe.steps[1].compare(&answers[1]);
    assert_eq!(
        differs,
        probe_format::Agreement::Differs {
            expected: vec!["ok path=/b".to_string()]
        }
    );
    let shown = probe_format::diff(&probe.steps[1], &["ok path=/b".into()], &answers[1]);
    assert!(
        shown.contains("- ok path=/b") && shown.contains("+ ok path=/a"),
        "{shown}"
    );
}

/// Prints the model's answers to the probe file named by `PROBE` (for writing probes).
#[test]
#[ignore]
fn print_model_answers() {
    let Ok(path) = std::env::var("PROBE") else {
        return;
    };
    let probe = Probe::load(Path::new(&path)).unwrap_or_else(|e| panic!("{e}"));
    let answers = run(&probe, PROBE_SEED).unwrap_or_else(|e| panic!("{e}"));
    for (step, answer) in probe.steps.iter().zip(answers) {
        println!("{}\n{}\n", step.text, answer.join("\n"));
    }
}
