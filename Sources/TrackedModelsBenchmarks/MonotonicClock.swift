import Foundation

/// Nanoseconds of `CLOCK_MONOTONIC`, which every process on the machine shares, so that a
/// commit time printed by one process compares with a receive time taken in another.
public func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// The CPU time this process has used so far, over all its threads, in microseconds.
public func processCPUMicroseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1_000
}
