//! Reclaims maps that a template made contain themselves.
//!
//! Maps are shared (`Rc`), and sprig's `set`/`merge` can make one reach itself
//! (`{{ $_ := set $d "self" $d }}`). Go's garbage collector frees such a cycle; reference
//! counting never does, so a long-running process (the operator renders again and again)
//! would leak every one. While an execution runs, every map created is tracked weakly; when
//! it ends, the maps still alive that the caller's data cannot reach are cleared, which
//! breaks their cycles and frees them.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::rc::{Rc, Weak};

use crate::value::Value;
use crate::value::tracking;

type Entries = RefCell<BTreeMap<String, Value>>;

/// Tracks the maps created from [`Collector::start`] until [`Collector::finish`]. Nested
/// collectors (an execution inside an execution) leave the work to the outermost one.
pub struct Collector {
    outermost: bool,
}

impl Collector {
    pub fn start() -> Collector {
        Collector {
            outermost: tracking::start(),
        }
    }

    /// Clears every tracked map that is still alive but not reachable from `roots` (the data
    /// the caller keeps). Call it after everything the execution held has been dropped.
    pub fn finish(mut self, roots: &[&Value]) {
        if !self.outermost {
            return;
        }
        self.outermost = false;
        let Some(tracked) = tracking::stop() else {
            return;
        };
        // Every tracked object is a map's entries (`Map::new` is the only caller of `track`).
        let survivors: Vec<Rc<Entries>> = tracked
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|any| any.downcast::<Entries>().ok())
            .collect();
        if survivors.is_empty() {
            return;
        }
        let reachable = reachable_maps(roots);
        for entries in survivors {
            if !reachable.contains(&(Rc::as_ptr(&entries) as usize)) {
                // Dropping the taken entries frees the cycle (iteratively, see `value`).
                let taken = std::mem::take(&mut *entries.borrow_mut());
                drop(taken);
            }
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        // A collector dropped without `finish` (an early return) still stops tracking.
        if self.outermost {
            tracking::stop();
        }
    }
}

/// The addresses of every map reachable from `roots`, walked iteratively.
fn reachable_maps(roots: &[&Value]) -> HashSet<usize> {
    let mut seen = HashSet::new();
    let mut stack: Vec<Value> = roots.iter().map(|v| (*v).clone()).collect();
    while let Some(v) = stack.pop() {
        match v {
            Value::Map(m) if seen.insert(Rc::as_ptr(&m.entries) as usize) => {
                stack.extend(m.entries.borrow().values().cloned());
            }
            Value::List(l) => stack.extend(l.items.iter().cloned()),
            _ => {}
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Map, MapKind};

    fn weak_of(m: &Map) -> Weak<Entries> {
        Rc::downgrade(&m.entries)
    }

    #[test]
    fn an_unreachable_cycle_is_freed() {
        let collector = Collector::start();
        let d = Map::new(MapKind::Any, BTreeMap::new());
        d.insert("self", Value::list(vec![Value::Map(d.clone())]));
        let weak = weak_of(&d);
        drop(d);
        assert!(weak.upgrade().is_some(), "the cycle keeps itself alive");
        collector.finish(&[]);
        assert!(weak.upgrade().is_none(), "the cycle is freed");
    }

    #[test]
    fn maps_the_caller_can_reach_are_kept_intact() {
        let root = Value::empty_map();
        let collector = Collector::start();
        let d = Map::new(MapKind::Any, BTreeMap::new());
        d.insert("self", Value::Map(d.clone()));
        d.insert("x", Value::Int(1));
        if let Value::Map(r) = &root {
            r.insert("kept", Value::Map(d.clone()));
        }
        drop(d);
        collector.finish(&[&root]);
        let kept = root.as_map().and_then(|r| r.get("kept"));
        let x = kept.as_ref().and_then(Value::as_map).and_then(|k| k.get("x"));
        assert!(matches!(x, Some(Value::Int(1))));
        // The caller's own cycle is the caller's to break.
        if let Some(Value::Map(k)) = kept {
            k.entries.borrow_mut().clear();
        }
    }

    #[test]
    fn nested_collectors_leave_the_work_to_the_outermost() {
        let outer = Collector::start();
        let inner = Collector::start();
        let d = Map::new(MapKind::Any, BTreeMap::new());
        d.insert("self", Value::Map(d.clone()));
        let weak = weak_of(&d);
        drop(d);
        inner.finish(&[]);
        assert!(weak.upgrade().is_some());
        outer.finish(&[]);
        assert!(weak.upgrade().is_none());
    }

    #[test]
    fn maps_made_without_a_collector_are_not_tracked() {
        let d = Map::new(MapKind::Any, BTreeMap::new());
        assert!(!tracking::active());
        drop(d);
    }
}
