//! The one worker pool: `count` independent jobs on `jobs` threads, taken in index order,
//! their results handed back on the calling thread in index order as they become ready.
//! Sweeps, the zoo and the lock comparison all run through it.
//!
//! Results come back through a small reorder buffer: a job that finishes before a lower one
//! waits in it until the lower one is in. So that the buffer stays small whatever the jobs
//! cost (one slow seed among fast ones), no thread starts a job more than
//! [`REORDER_WINDOW_PER_JOB`] × `jobs` indices past the lowest one not yet handed back;
//! the buffer therefore never holds more than that many results, and a sweep of any number
//! of seeds runs in memory bounded by its jobs, not its seeds.

use std::{
    collections::BTreeMap,
    num::NonZeroUsize,
    panic::{AssertUnwindSafe, catch_unwind, resume_unwind},
    sync::{
        Condvar, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
        mpsc,
    },
    thread,
};

/// How many indices per thread a job may start ahead of the lowest result not yet handed
/// back: 2 keeps every thread busy while one slow job holds up the results behind it.
pub const REORDER_WINDOW_PER_JOB: usize = 2;

/// Runs `work(i)` for every `i` in `0..count` on `jobs` threads, taking the indices in
/// order and none once `stop` is set; `on_done` sees each result on the calling thread as
/// it finishes (for progress). The results that finished, sorted by index: the same for any
/// number of jobs when nothing stops them. See [`in_parallel_in_order`], which this
/// collects.
pub fn in_parallel<R: Send>(
    count: usize,
    jobs: NonZeroUsize,
    stop: &AtomicBool,
    work: impl Fn(usize) -> R + Sync,
    on_done: impl FnMut(&R),
) -> Vec<(usize, R)> {
    let mut results: Vec<(usize, R)> = Vec::new();
    in_parallel_in_order(count, jobs, stop, work, on_done, |index, result| {
        results.push((index, result));
    });
    results
}

/// Runs `work(i)` for every `i` in `0..count` on `jobs` threads, taking the indices in
/// order and none once `stop` is set (a job taken always runs, so the jobs that ran are
/// `0..n` for some `n`). On the calling thread, `on_done` sees each result as it finishes
/// (in finishing order: for progress), then `in_order` takes it in index order, so what
/// `in_order` sees is the same for any number of jobs. At most
/// [`REORDER_WINDOW_PER_JOB`] × `jobs` results are held at once.
///
/// If a job (or `on_done`, or `in_order`) panics, no new job starts, `in_order` sees the
/// results below it and none above, and the panic goes on from the calling thread once the
/// running jobs finish: as running the jobs one after another would have done. Each thread has the main thread's
/// 8 MiB stack, since a simulated world polls deeply nested futures.
pub fn in_parallel_in_order<R: Send>(
    count: usize,
    jobs: NonZeroUsize,
    stop: &AtomicBool,
    work: impl Fn(usize) -> R + Sync,
    mut on_done: impl FnMut(&R),
    mut in_order: impl FnMut(usize, R),
) {
    let window = jobs.get() * REORDER_WINDOW_PER_JOB;
    let next = AtomicUsize::new(0);
    let panicked = AtomicBool::new(false);
    let handed_back = HandedBack::default();
    let (sender, receiver) = mpsc::channel::<(usize, thread::Result<R>)>();
    let mut first_panic = None;
    thread::scope(|scope| {
        for _ in 0..jobs.get().min(count.max(1)) {
            let sender = sender.clone();
            let (next, work, panicked, handed_back) = (&next, &work, &panicked, &handed_back);
            thread::Builder::new()
                .stack_size(8 << 20)
                .spawn_scoped(scope, move || {
                    while !stop.load(Ordering::SeqCst) && !panicked.load(Ordering::SeqCst) {
                        let index = next.fetch_add(1, Ordering::SeqCst);
                        if index >= count {
                            break;
                        }
                        handed_back.wait_until_within(index, window);
                        let result = catch_unwind(AssertUnwindSafe(|| work(index)));
                        if sender.send((index, result)).is_err() {
                            break;
                        }
                    }
                })
                .expect("a thread starts");
        }
        drop(sender);
        let mut waiting: BTreeMap<usize, thread::Result<R>> = BTreeMap::new();
        let mut expected = 0;
        for (index, result) in receiver {
            // A panic in `on_done` or `in_order` (a test's assertion about a run) counts as
            // the job's own: unwinding out of here would leave threads waiting for room.
            let result = result.and_then(|result| {
                catch_unwind(AssertUnwindSafe(|| on_done(&result))).map(|()| result)
            });
            if result.is_err() {
                panicked.store(true, Ordering::SeqCst);
            }
            waiting.insert(index, result);
            while let Some(result) = waiting.remove(&expected) {
                let handed = match result {
                    Ok(result) if first_panic.is_none() => {
                        catch_unwind(AssertUnwindSafe(|| in_order(expected, result)))
                    }
                    Ok(_) => Ok(()),
                    Err(panic) => Err(panic),
                };
                if let Err(panic) = handed {
                    panicked.store(true, Ordering::SeqCst);
                    first_panic.get_or_insert(panic);
                }
                expected += 1;
            }
            handed_back.set(expected);
        }
    });
    if let Some(panic) = first_panic {
        resume_unwind(panic);
    }
}

/// How many results, from index 0, have been handed back in order; threads wait on it
/// before starting a job too far ahead.
#[derive(Default)]
struct HandedBack {
    count: Mutex<usize>,
    changed: Condvar,
}

impl HandedBack {
    /// Blocks until `index` is less than `window` past the lowest index not handed back.
    /// It always comes: every index below `index` was taken by a thread that runs it.
    fn wait_until_within(&self, index: usize, window: usize) {
        let mut count = self.count.lock().expect("no panic holds the lock");
        while index >= *count + window {
            count = self.changed.wait(count).expect("no panic holds the lock");
        }
    }

    fn set(&self, count: usize) {
        *self.count.lock().expect("no panic holds the lock") = count;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_index_order_and_the_buffer_stays_within_the_window() {
        let jobs = NonZeroUsize::new(3).unwrap();
        let stop = AtomicBool::new(false);
        let running_ahead = AtomicUsize::new(0);
        let handed = AtomicUsize::new(0);
        let mut seen = Vec::new();
        in_parallel_in_order(
            200,
            jobs,
            &stop,
            |index| {
                // Index 0 is slow: everything else would pile up behind it without a window.
                if index == 0 {
                    thread::sleep(std::time::Duration::from_millis(50));
                }
                let ahead = index - handed.load(Ordering::SeqCst).min(index);
                running_ahead.fetch_max(ahead, Ordering::SeqCst);
                index * 10
            },
            |_| {},
            |index, result| {
                handed.store(index + 1, Ordering::SeqCst);
                seen.push((index, result));
            },
        );
        let expected: Vec<(usize, usize)> = (0..200).map(|index| (index, index * 10)).collect();
        assert_eq!(seen, expected);
        let ahead = running_ahead.load(Ordering::SeqCst);
        assert!(
            ahead < 3 * REORDER_WINDOW_PER_JOB,
            "a job started {ahead} past the results handed back"
        );
    }

    #[test]
    fn a_panicking_job_hands_back_the_results_below_it_then_panics_on() {
        let stop = AtomicBool::new(false);
        let mut seen = Vec::new();
        let ran = catch_unwind(AssertUnwindSafe(|| {
            in_parallel_in_order(
                100,
                NonZeroUsize::new(2).unwrap(),
                &stop,
                |index| {
                    assert!(index != 7, "job 7 fails");
                    index
                },
                |_| {},
                |index, _| seen.push(index),
            );
        }));
        let panic = ran.expect_err("the panic goes on");
        assert_eq!(
            panic.downcast_ref::<&str>().copied(),
            Some("job 7 fails"),
            "the job's own panic"
        );
        assert_eq!(seen, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_in_order_stops_the_rest_and_goes_on() {
        let stop = AtomicBool::new(false);
        let mut seen = Vec::new();
        let ran = catch_unwind(AssertUnwindSafe(|| {
            in_parallel_in_order(
                100,
                NonZeroUsize::new(2).unwrap(),
                &stop,
                |index| index,
                |_| {},
                |index, _| {
                    assert!(index != 5, "result 5 is wrong");
                    seen.push(index);
                },
            );
        }));
        assert!(ran.is_err(), "the assertion's panic goes on");
        assert_eq!(seen, (0..5).collect::<Vec<_>>());
    }
}
