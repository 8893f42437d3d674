//! The maps created while an execution runs, held weakly for [`super::cycles::Collector`]. It
//! names no value type (the entries are `dyn Any`), so the value model can record each map it
//! makes here without depending on the collector that reads them.

use std::any::Any;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// Tracked objects of the execution in progress, with the size at which dead entries are next
/// swept out (so a template making millions of short-lived maps keeps the list small).
struct Tracked {
    objects: Vec<Weak<dyn Any>>,
    sweep_at: usize,
}

const FIRST_SWEEP: usize = 1024;

thread_local! {
    static TRACKED: RefCell<Option<Tracked>> = const { RefCell::new(None) };
}

/// Records an object created while an execution is tracking; nothing when none is.
pub(crate) fn track<T: Any>(object: &Rc<T>) {
    TRACKED.with(|t| {
        if let Ok(mut t) = t.try_borrow_mut()
            && let Some(t) = t.as_mut()
        {
            if t.objects.len() >= t.sweep_at {
                t.objects.retain(|w| w.strong_count() > 0);
                t.sweep_at = (t.objects.len() * 2).max(FIRST_SWEEP);
            }
            let object: Rc<dyn Any> = Rc::clone(object) as Rc<dyn Any>;
            t.objects.push(Rc::downgrade(&object));
        }
    });
}

/// Starts tracking on this thread; false when tracking already runs (a nested execution,
/// whose objects the outermost one's collector handles).
pub(crate) fn start() -> bool {
    TRACKED.with(|t| {
        let mut t = t.borrow_mut();
        if t.is_some() {
            return false;
        }
        *t = Some(Tracked {
            objects: Vec::new(),
            sweep_at: FIRST_SWEEP,
        });
        true
    })
}

/// Stops tracking on this thread and hands back what was tracked.
pub(crate) fn stop() -> Option<Vec<Weak<dyn Any>>> {
    TRACKED
        .with(|t| t.borrow_mut().take())
        .map(|tracked| tracked.objects)
}

/// Whether tracking runs on this thread.
#[cfg(test)]
pub(crate) fn active() -> bool {
    TRACKED.with(|t| t.borrow().is_some())
}
