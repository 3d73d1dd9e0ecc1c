package dev.layover.console;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * The errors Jetty answers before the console's servlet sees a request (a malformed request line
 * or URI, headers too large): the console's JSON error shape and security headers, never an HTML
 * page that echoes the request.
 */
final class JsonErrorHandler extends ErrorHandler {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        Object s = request.getAttribute(ERROR_STATUS);
        int status = s instanceof Integer i ? i : response.getStatus() >= 400 ? response.getStatus() : 500;
        HttpFields.Mutable h = response.getHeaders();
        headers(h);
        // Jetty closes the connection after such an error: say so, or a client reuses a dead connection
        h.put(HttpHeader.CONNECTION, "close");
        response.setStatus(status);
        response.write(true, ByteBuffer.wrap(body(status, illegalPath(request.getAttribute(ERROR_EXCEPTION)))),
                callback);
        return true;
    }

    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
        headers(fields);
        return ByteBuffer.wrap(body(status, false));
    }

    /** Whether Jetty refused the request's path for a character in it (an encoded NUL, say). */
    private static boolean illegalPath(Object error) {
        for (Throwable t = error instanceof Throwable x ? x : null; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t.getMessage() != null && t.getMessage().contains("Illegal character in path")) {
                return true;
            }
        }
        return false;
    }

    private static void headers(HttpFields.Mutable h) {
        h.put(HttpHeader.CONTENT_TYPE, "application/json; charset=utf-8");
        h.put("Content-Security-Policy", ConsoleSecurity.CSP);
        h.put("X-Content-Type-Options", "nosniff");
        h.put("Referrer-Policy", "no-referrer");
        h.put("X-Frame-Options", "DENY");
        h.put(HttpHeader.CACHE_CONTROL, "no-store");
    }

    private static byte[] body(int status, boolean illegalPath) {
        ObjectNode n = JSON.createObjectNode();
        String reason = HttpStatus.getMessage(status);
        n.put("error", illegalPath
                ? "the request's path contains a character a path may not hold (an encoded NUL, %00, or a control "
                        + "character), which no provider key, job type or id can contain"
                : "the request was refused: " + (reason == null ? "HTTP " + status : reason));
        n.put("status", status);
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }
}
