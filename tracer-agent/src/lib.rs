//! LD_PRELOAD agent.
