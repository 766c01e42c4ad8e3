//! `coordsim conformance`: the committed probes agree (or declare why not), a probe the model
//! answers otherwise fails with the step's diff, and a malformed probe file is one line naming
//! the file, the probe and the field, with exit code 2.

mod common;

use common::{Ran, assert_bad_input, coordsim, scratch};

/// `coordsim conformance --store STORE --probes DIR` on a scratch folder for `test` that holds
/// `probes` (file name, text) in its STORE subfolder.
fn conformance_on(test: &str, store: &str, probes: &[(&str, &str)]) -> Ran {
    let dir = scratch(test);
    std::fs::create_dir_all(dir.join(store)).unwrap();
    for (name, text) in probes {
        std::fs::write(dir.join(store).join(name), text).unwrap();
    }
    coordsim(&[
        "conformance",
        "--store",
        store,
        "--probes",
        dir.to_str().unwrap(),
    ])
}

#[test]
fn the_committed_probes_agree_or_declare_their_deviations() {
    let ran = coordsim(&["conformance", "--deviations"]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("| ZooKeeper 3.8 |"), "{}", ran.stdout);
    assert!(ran.stdout.contains("| etcd 3.4 "), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("declared deviations:"),
        "{}",
        ran.stdout
    );
}

#[test]
fn a_step_the_model_answers_otherwise_is_a_diff_and_exit_1() {
    let ran = conformance_on(
        "conformance-differs",
        "zk",
        &[(
            "wrong.probe",
            "# about: a planted wrong answer\n\nc1 connect\n----\nok session=s1 timeout_ms=6000\n\nc1 create /a\n----\nerr NodeExists\n",
        )],
    );
    assert_eq!(ran.code, 1, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains("line 7: c1 create /a"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("- err NodeExists\n+ ok path=/a"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("| 1      | 2     | 1     |"),
        "{}",
        ran.stdout
    );
}

#[test]
fn a_malformed_probe_is_one_line_naming_the_file_the_probe_and_the_field() {
    let ran = conformance_on(
        "conformance-malformed",
        "etcd",
        &[(
            "typo.probe",
            "# about: a typo\n\nc1 putt a 1\n----\nok rev=2\n",
        )],
    );
    assert_bad_input(
        &ran,
        "typo.probe:3: probe `typo`, field `verb`: expected one of put",
    );
}

#[test]
fn a_folder_without_probes_is_bad_input_not_a_green() {
    let ran = conformance_on("conformance-empty", "zk", &[]);
    assert_bad_input(&ran, "no .probe files in");
}
