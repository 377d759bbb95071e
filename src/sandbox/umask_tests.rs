use super::*;

fn own_tid() -> Pid {
    nix::unistd::gettid()
}

/// A tid no thread has: pid_max is at most 2^22.
fn gone() -> Pid {
    Pid::from_raw(i32::MAX)
}

/// Runs `f` on a thread whose umask is its own (`unshare(CLONE_FS)`),
/// set to `umask`: the other tests' stays as it was.
fn on_own_thread<T: Send + 'static>(umask: u32, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_FS).unwrap();
        nix::sys::stat::umask(Mode::from_bits_truncate(umask));
        f()
    })
    .join()
    .unwrap()
}

#[test]
fn the_umask_read_is_this_threads() {
    let seen = on_own_thread(0o027, || read(own_tid()));
    assert_eq!(seen, Some(Mode::from_bits_truncate(0o027)));
}

#[test]
fn a_umask_call_whose_effect_shows_is_made() {
    on_own_thread(0o022, || {
        let umasks = Umasks::default();
        umasks.changing(own_tid(), 0o022, || true);
        assert!(
            !umasks.lock().settled(),
            "nothing is kept while a call is on its way"
        );
        assert_eq!(umasks.lock().generation, 1);
        umasks.settle(own_tid());
        assert!(umasks.lock().settled());
    });
}

#[test]
fn a_umask_call_not_yet_seen_waits_for_its_callers_next_call() {
    on_own_thread(0o022, || {
        let umasks = Umasks::default();
        umasks.changing(own_tid(), 0o077, || true);
        umasks.settle(own_tid());
        let mut state = umasks.lock();
        assert!(!state.settled(), "its effect has not shown");
        assert!(!state.off);
        // A dead caller's tid given to another thread proves nothing.
        assert!(!state.confirm(own_tid(), || false));
        // The caller calls again: it made the call before.
        assert!(state.confirm(own_tid(), || true));
        assert!(state.settled());
    });
}

#[test]
fn save_and_restore_by_one_thread_keeps_keeping_on() {
    // `old = umask(0); umask(old)`, as pip does: two calls, one after the
    // other, the second arriving before the first's effect was looked at.
    on_own_thread(0o022, || {
        let umasks = Umasks::default();
        umasks.changing(own_tid(), 0o000, || true);
        umasks.changing(own_tid(), 0o022, || true);
        umasks.settle(own_tid());
        let state = umasks.lock();
        assert!(!state.off);
        assert!(state.settled());
    });
}

#[test]
fn another_threads_call_not_known_made_stops_keeping() {
    let umasks = std::sync::Arc::new(Umasks::default());
    let first = umasks.clone();
    // A thread (still alive while the second call arrives) whose call has
    // not shown: its umask stays 022, it asked for 077.
    let (ready, wait) = std::sync::mpsc::channel();
    let (done, finish) = std::sync::mpsc::channel::<()>();
    let other = std::thread::spawn(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_FS).unwrap();
        nix::sys::stat::umask(Mode::from_bits_truncate(0o022));
        first.changing(own_tid(), 0o077, || true);
        ready.send(()).unwrap();
        finish.recv().unwrap();
    });
    wait.recv().unwrap();
    umasks.changing(own_tid(), 0o022, || true);
    done.send(()).unwrap();
    other.join().unwrap();
    assert!(umasks.lock().off);
}

#[test]
fn a_call_of_a_thread_gone_is_made() {
    let umasks = Umasks::default();
    umasks.changing(gone(), 0o077, || true);
    let mut state = umasks.lock();
    assert!(state.confirm(own_tid(), || true));
}

#[test]
fn once_off_a_umask_call_costs_nothing_more() {
    let umasks = Umasks::default();
    umasks.stop();
    umasks.changing(own_tid(), 0o077, || true);
    let state = umasks.lock();
    assert!(state.off);
    assert_eq!(state.generation, 0);
    assert!(state.changing.is_none());
}

#[test]
fn a_pidfd_tells_an_exited_thread_from_a_live_one() {
    let live = sys::pidfd_open(own_tid()).expect("a pidfd of this thread");
    assert!(alive(&live));
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        tx.send(sys::pidfd_open(nix::unistd::gettid())).unwrap();
    });
    let pidfd = rx.recv().unwrap();
    worker.join().unwrap();
    // Before Linux 6.9 a pidfd names only a thread group's leader.
    if let Ok(pidfd) = pidfd {
        assert!(!alive(&pidfd), "the thread exited");
    }
}
