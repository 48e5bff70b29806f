//! Windowed min/max filter (Linux lib/win_minmax.c, Kathleen Nichols' algorithm).
//!
//! Keeps the best, second-best and third-best sample in a sliding window so that the
//! running min (or max) is known in O(1) per update. Used for `tp->rtt_min` (min filter
//! over `tcp_min_rtt_wlen` seconds) and for BBR's max-bandwidth filter (over 10 rounds).
//! Times and values are u32 as in the kernel; the time unit is the caller's (jiffies,
//! microseconds or round counts).

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinMaxSample {
    pub t: u32,
    pub v: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinMax {
    pub s: [MinMaxSample; 3],
}

impl MinMax {
    /// `minmax_get()`.
    #[inline]
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// `minmax_reset()`.
    #[inline]
    pub fn reset(&mut self, t: u32, meas: u32) -> u32 {
        let val = MinMaxSample { t, v: meas };
        self.s = [val; 3];
        self.s[0].v
    }

    /// `minmax_subwin_update()`: as time passes, update the 1st, 2nd and 3rd choices.
    fn subwin_update(&mut self, win: u32, val: MinMaxSample) -> u32 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // Passed entire window without a new val so make 2nd choice the new val and
            // 3rd choice the new 2nd choice. We may have to iterate this since our 2nd
            // choice may also be outside the window (we checked on entry that the third
            // choice was in the window).
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // We've passed a quarter of the window without a new val so take a 2nd choice
            // from the 2nd quarter of the window.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // We've passed half the window without finding a new val so take a 3rd choice
            // from the last half of the window.
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_max()`: check if new measurement updates the 1st, 2nd or 3rd choice max.
    pub fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinMaxSample { t, v: meas };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas); // found new max, or nothing left in window
        }
        if val.v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_min()`: check if new measurement updates the 1st, 2nd or 3rd choice min.
    pub fn running_min(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinMaxSample { t, v: meas };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_max_forgets_old_peaks() {
        let mut m = MinMax::default();
        m.running_max(10, 0, 100);
        for t in 1..=10 {
            assert_eq!(m.running_max(10, t, 50), 100);
        }
        // The peak at t=0 is now more than 10 units old.
        assert!(m.running_max(10, 11, 50) <= 50);
    }

    #[test]
    fn running_min_takes_lower_values_immediately() {
        let mut m = MinMax::default();
        m.reset(0, u32::MAX);
        assert_eq!(m.running_min(300, 1, 20_000), 20_000);
        assert_eq!(m.running_min(300, 2, 25_000), 20_000);
        assert_eq!(m.running_min(300, 3, 10_000), 10_000);
    }
}
