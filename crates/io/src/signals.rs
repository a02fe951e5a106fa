//! Catching SIGINT and SIGTERM so a long command (a build) can stop cleanly:
//! the handler only records the signal, the command polls [`caught`] and
//! winds down (a build removes its staging directory). Here because it
//! needs `sigaction`, and unsafe code lives in this crate and `simd` only.

use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal caught, 0 before any.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // One atomic operation: async-signal-safe. The first signal wins, so
    // the exit status names the one that started the shutdown.
    let _ = CAUGHT.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM. A signal the process
/// inherited as ignored (a shell's background job, `nohup`) stays ignored.
/// Each handler is one-shot (SA_RESETHAND): a second Ctrl-C kills the
/// process at once, for a user who will not wait for the clean stop (the
/// next build of the same target removes what it left).
pub fn catch_interrupts() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: a null new action only reads the current one into `old`,
        // a valid, writable sigaction.
        if unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: zeroed is a valid sigaction, and the call above filled it.
        let old = unsafe { old.assume_init() };
        if old.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: all-zero bytes are a valid sigaction (empty mask, no flags).
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SA_RESTART: reads and writes in progress resume instead of
        // failing with EINTR; the command notices the signal at its next poll.
        act.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        // SAFETY: `act` is a valid sigaction whose handler only performs an
        // atomic store; the old action is not asked for.
        if unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal caught since [`catch_interrupts`] (the first, if several).
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SIGTERM sent to the process is recorded, not fatal, and the
    /// handler is one-shot.
    #[test]
    fn records_the_first_signal() {
        catch_interrupts().unwrap();
        assert_eq!(caught(), None);
        // SAFETY: raise only sends a signal to this thread.
        assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
        assert_eq!(caught(), Some(libc::SIGTERM));
        let mut now = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: as in catch_interrupts, only reads the current action.
        unsafe { libc::sigaction(libc::SIGTERM, std::ptr::null(), now.as_mut_ptr()) };
        // SAFETY: filled by the call above (or left zeroed, which is valid).
        let now = unsafe { now.assume_init() };
        assert_eq!(now.sa_sigaction, libc::SIG_DFL, "one-shot handler");
    }
}
