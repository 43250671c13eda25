import Hummingbird
import HTTPTypes
import Logging

/// Logs one ``RequestLogLine`` per request at info, after the response is made (status, bytes
/// and latency known). Replaces Hummingbird's `LogRequestsMiddleware`, which logs neither
/// status nor latency and, asked for headers, would log `Authorization`.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let target = request.head.path ?? "/"
        do {
            let response = try await next(request, context)
            log(request, target, status: response.status.code, bytes: response.body.contentLength, start, context)
            return response
        } catch let error as any HTTPResponseError {
            log(request, target, status: error.status.code, bytes: nil, start, context)
            throw error
        } catch {
            log(request, target, status: 500, bytes: nil, start, context)
            throw error
        }
    }

    private func log(
        _ request: Request, _ target: String, status: Int, bytes: Int?, _ start: ContinuousClock.Instant,
        _ context: Context
    ) {
        let line = RequestLogLine(
            method: request.method.rawValue, target: target, status: status, bytes: bytes,
            latency: ContinuousClock.now - start)
        context.logger.info("\(line.description)")
    }
}
