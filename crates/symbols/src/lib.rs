//! Symbols: recorded return addresses turned into functions, files and modules ([`Symbolizer`]),
//! and the rule that picks the frame naming a call site ([`naming_frame`], [`SkipList`]). Used
//! by the graph stage to name leaf types and by `scalpel dump` to print stacks.

mod aliases;
mod demangle;
mod naming;
mod program;
mod symbolize;

pub use naming::{
    naming_frame, short_name, SkipList, DEFAULT_SKIP_FUNCTIONS, DEFAULT_SKIP_MODULES,
    DEFAULT_SKIP_SOURCES,
};
pub use symbolize::{Frame, Missing, ModuleProblem, ModuleWarning, Symbolizer};
