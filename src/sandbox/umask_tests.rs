use super::*;

fn own_tid() -> Pid {
    nix::unistd::gettid()
}

fn own_umask() -> Mode {
    read(own_tid()).expect("this thread's status")
}

#[test]
fn the_umask_read_is_this_threads() {
    // On a thread of its own attributes: the other tests' umask stays.
    let seen = std::thread::spawn(|| {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_FS).unwrap();
        nix::sys::stat::umask(Mode::from_bits_truncate(0o027));
        own_umask()
    })
    .join()
    .unwrap();
    assert_eq!(seen, Mode::from_bits_truncate(0o027));
}

#[test]
fn a_umask_call_forgets_what_was_kept_until_it_shows() {
    let umasks = Umasks::default();
    umasks.changing();
    {
        let state = umasks.lock();
        assert_eq!(state.generation, 1);
        assert!(
            !state.settled(),
            "nothing is kept while a umask call is on its way"
        );
    }
    // This thread's umask is what the call asked for: it shows at once.
    umasks.settle(own_tid(), u64::from(own_umask().bits()));
    let state = umasks.lock();
    assert!(state.settled());
    assert!(!state.off);
}

#[test]
fn a_umask_call_whose_effect_does_not_show_stops_keeping() {
    let umasks = Umasks::default();
    umasks.changing();
    let other = own_umask().bits() ^ 0o070;
    umasks.settle(own_tid(), u64::from(other));
    let state = umasks.lock();
    assert_eq!(state.changing, 0);
    assert!(
        state.off,
        "a change not seen may still come: nothing kept is trusted"
    );
}

#[test]
fn two_umask_calls_at_once_stop_keeping() {
    let umasks = Umasks::default();
    umasks.changing();
    umasks.changing();
    assert!(umasks.lock().off);
}

#[test]
fn a_caller_gone_before_its_umask_showed_leaves_keeping_on() {
    let umasks = Umasks::default();
    umasks.changing();
    // No thread has this tid: pid_max is at most 2^22.
    umasks.settle(Pid::from_raw(i32::MAX), 0o077);
    let state = umasks.lock();
    assert!(state.settled());
}

#[test]
fn a_thread_of_its_own_attributes_stops_keeping() {
    let umasks = Umasks::default();
    umasks.stop();
    assert!(!umasks.lock().settled());
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
