//! The process's rank, which the logger adds to each record and the JSON stream's INFO lines
//! carry.

/// The process's rank, found the way tcap_dllogger finds it:
///
/// 1. neither `WORLD_SIZE` nor `PADDLE_TRAINERS_NUM` set → not a distributed launch: `None`
///    (tcap uses 0);
/// 2. `WORLD_SIZE` = 1 → `Some(0)`;
/// 3. `LOCAL_RANK` (torchrun) if set, else `PADDLE_TRAINER_ID` (Paddle), else `Some(0)`.
///
/// A rank variable that is not a non-negative integer gives `None` (tcap would crash) and a
/// `tracing` warning naming the variable.
pub fn rank_from_env() -> Option<u32> {
    rank_from_vars(|k| std::env::var(k).ok())
}

/// [`rank_from_env`] over any variable lookup, so the rule can be tested without touching the
/// process environment.
pub fn rank_from_vars(get: impl Fn(&str) -> Option<String>) -> Option<u32> {
    let world = get("WORLD_SIZE");
    if world.is_none() && get("PADDLE_TRAINERS_NUM").is_none() {
        return None;
    }
    if world.as_deref().map(str::trim) == Some("1") {
        return Some(0);
    }
    for var in ["LOCAL_RANK", "PADDLE_TRAINER_ID"] {
        if let Some(v) = get(var) {
            return match v.trim().parse::<u32>() {
                Ok(r) => Some(r),
                Err(_) => {
                    tracing::warn!(
                        "{var}={v:?} is not a non-negative integer; logging without a rank"
                    );
                    None
                }
            };
        }
    }
    Some(0)
}
