//! Caught panics are returned, not printed (issue 10 item 13), and a panic
//! weft did not catch still reaches the hook the program installed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn caught_panics_are_not_printed_and_others_still_are() {
    let printed = Arc::new(AtomicUsize::new(0));
    let p = printed.clone();
    // The program's own hook (stands in for the default, which prints).
    std::panic::set_hook(Box::new(move |_| {
        p.fetch_add(1, Ordering::SeqCst);
    }));
    let r: weft::Result<()> = weft::catch_panic(|| panic!("a bug, caught"));
    assert!(matches!(r, Err(weft::Error::Internal(m)) if m.contains("a bug, caught")));
    assert_eq!(printed.load(Ordering::SeqCst), 0, "a returned panic was also printed");
    // A panic outside weft's catch goes to the program's hook as before.
    let t = std::thread::spawn(|| panic!("not weft's"));
    assert!(t.join().is_err());
    assert_eq!(printed.load(Ordering::SeqCst), 1);
}
