//! What a sweep's runs showed beyond their verdicts: how much each check judged, and which
//! coverage marks were reached. A sweep whose every run is clean has still shown nothing
//! about a property whose check judged nothing in every seed, or about a situation it never
//! reached; [`Evidence::problems`] names both, and a sweep fails on them.

use crate::outcome::Outcome;
use checks::linearizability::resolve::Resolved;
use serde::{Deserialize, Serialize};
use sim::coverage::Mark;

/// One check over a sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckEvidence {
    /// The check.
    pub check: String,
    /// Its unit, plural.
    pub judges: String,
    /// Whether the scenario relies on it.
    pub relied_on: bool,
    /// Seeds whose audit ran it.
    pub seeds_run: u64,
    /// Seeds in which it judged something.
    pub seeds_judged: u64,
    /// Items judged over all seeds.
    pub judged: u64,
    /// For a linearizability check: its operations of unknown outcome over all seeds, as
    /// they were resolved ([`crate::outcome::CheckTally::resolved`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Resolved>,
}

/// One coverage mark over a sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkEvidence {
    /// The mark.
    pub mark: Mark,
    /// Whether the scenario declares it (a sweep fails if a declared mark was never hit).
    pub declared: bool,
    /// Seeds that reached it.
    pub seeds: u64,
    /// Times it was reached over all seeds.
    pub reached: u64,
}

/// What a sweep's runs showed about its checks and marks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Every check that ran in some seed, in the order the first audit ran them.
    pub checks: Vec<CheckEvidence>,
    /// Every declared mark and every mark some seed reached, in mark order.
    pub marks: Vec<MarkEvidence>,
}

impl Evidence {
    /// The evidence of `outcomes`, for a scenario that declares `declared`.
    pub fn of(outcomes: &[Outcome], declared: &[Mark]) -> Self {
        let mut evidence = Evidence::declaring(declared);
        for outcome in outcomes {
            evidence.add(outcome);
        }
        evidence
    }

    /// The evidence of no runs yet, for a scenario that declares `declared`: [`Evidence::add`]
    /// folds the runs in one by one, so a sweep need not hold them.
    pub fn declaring(declared: &[Mark]) -> Self {
        let marks = Mark::ALL
            .into_iter()
            .filter(|mark| declared.contains(mark))
            .map(|mark| MarkEvidence {
                mark,
                declared: true,
                seeds: 0,
                reached: 0,
            })
            .collect();
        Evidence {
            checks: Vec::new(),
            marks,
        }
    }

    /// Folds one more run in.
    pub fn add(&mut self, outcome: &Outcome) {
        for tally in &outcome.checks {
            let index = match self.checks.iter().position(|c| c.check == tally.check) {
                Some(index) => index,
                None => {
                    self.checks.push(CheckEvidence {
                        check: tally.check.clone(),
                        judges: tally.judges.clone(),
                        relied_on: tally.relied_on,
                        seeds_run: 0,
                        seeds_judged: 0,
                        judged: 0,
                        resolved: None,
                    });
                    self.checks.len() - 1
                }
            };
            let check = &mut self.checks[index];
            check.seeds_run += 1;
            check.seeds_judged += u64::from(!tally.is_vacuous());
            check.judged += tally.judged;
            if let Some(resolved) = tally.resolved {
                *check.resolved.get_or_insert_default() += resolved;
            }
        }
        for (&mark, &reached) in &outcome.marks {
            // Kept in mark order, as a fold over all runs at once would list them.
            let index = match self.marks.binary_search_by(|known| known.mark.cmp(&mark)) {
                Ok(index) => index,
                Err(index) => {
                    self.marks.insert(
                        index,
                        MarkEvidence {
                            mark,
                            declared: false,
                            seeds: 0,
                            reached: 0,
                        },
                    );
                    index
                }
            };
            self.marks[index].seeds += 1;
            self.marks[index].reached += reached;
        }
    }

    /// The checks the scenario relies on that judged nothing in any seed that ran them.
    pub fn vacuous_relied_on(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|check| check.relied_on && check.seeds_run > 0 && check.seeds_judged == 0)
            .map(|check| check.check.as_str())
            .collect()
    }

    /// The checks that judged nothing in any seed, relied on or not (the vacuity report).
    pub fn vacuous(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|check| check.seeds_run > 0 && check.seeds_judged == 0)
            .map(|check| check.check.as_str())
            .collect()
    }

    /// The declared marks no seed reached.
    pub fn marks_missed(&self) -> Vec<Mark> {
        self.marks
            .iter()
            .filter(|mark| mark.declared && mark.seeds == 0)
            .map(|mark| mark.mark)
            .collect()
    }

    /// What the sweep failed to show, one line each (empty: it showed what it relies on).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let vacuous = self.vacuous_relied_on();
        if !vacuous.is_empty() {
            problems.push(format!(
                "checks the scenario relies on judged nothing in any seed: {} (a check that \
                 judged nothing has shown nothing: give it material, or skip it with a \
                 reason in `skip_checks`)",
                vacuous.join(", ")
            ));
        }
        let missed = self.marks_missed();
        if !missed.is_empty() {
            let names: Vec<&str> = missed.iter().map(|mark| mark.name()).collect();
            problems.push(format!(
                "marks the scenario declares were reached in no seed: {} (the sweep did not \
                 test what the scenario exists for)",
                names.join(", ")
            ));
        }
        problems
    }
}
