//! The library side of the `narad` tool: the parts a fuzz target or another
//! tool can drive without spawning the binary.

pub mod lines;
