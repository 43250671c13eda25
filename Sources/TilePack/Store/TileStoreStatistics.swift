/// What the store has done, for dashboards, the stress command and tests.
public struct TileStoreStatistics: Sendable, Equatable, Codable {
    public var hits = 0
    public var misses = 0
    /// Archive reads that found a tile (misses that found nothing are not loads).
    public var loads = 0
    /// Misses that joined another thread's load of the same tile (single flight).
    public var singleFlightWaits = 0
    public var evictions = 0
    public var residentBytes = 0
    public var peakResidentBytes = 0
    public var budgetBytes = 0
    /// Times `resident > budget` was seen after an operation (must stay 0).
    public var budgetViolations = 0
    public var memoryWarnings = 0
    public var bytesFreedByPressure = 0
    /// Buffers allocated (not reused from the pool).
    public var bufferAllocations = 0
    public var cachedEntries = 0
    public var leasedEntries = 0
    public var loadP50Micros = 0.0
    public var loadP99Micros = 0.0

    public var hitRate: Double { hits + misses == 0 ? 0 : Double(hits) / Double(hits + misses) }

    enum CodingKeys: String, CodingKey {
        case hits, misses, loads, evictions
        case singleFlightWaits = "single_flight_waits"
        case residentBytes = "resident_bytes"
        case peakResidentBytes = "peak_resident_bytes"
        case budgetBytes = "budget_bytes"
        case budgetViolations = "budget_violations"
        case memoryWarnings = "memory_warnings"
        case bytesFreedByPressure = "bytes_freed_by_pressure"
        case bufferAllocations = "buffer_allocations"
        case cachedEntries = "cached_entries"
        case leasedEntries = "leased_entries"
        case loadP50Micros = "load_p50_us"
        case loadP99Micros = "load_p99_us"
    }
}
