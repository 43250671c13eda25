#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Processor count without Foundation's ProcessInfo (FoundationEssentials may lack it).
public enum ProcessorInfo {
    public static var activeCount: Int {
        let n = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        return n > 0 ? Int(n) : 1
    }
}
