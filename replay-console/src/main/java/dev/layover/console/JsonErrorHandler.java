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
        response.setStatus(status);
        response.write(true, ByteBuffer.wrap(body(status)), callback);
        return true;
    }

    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
        headers(fields);
        return ByteBuffer.wrap(body(status));
    }

    private static void headers(HttpFields.Mutable h) {
        h.put(HttpHeader.CONTENT_TYPE, "application/json; charset=utf-8");
        h.put("Content-Security-Policy", ConsoleSecurity.CSP);
        h.put("X-Content-Type-Options", "nosniff");
        h.put("Referrer-Policy", "no-referrer");
        h.put("X-Frame-Options", "DENY");
        h.put(HttpHeader.CACHE_CONTROL, "no-store");
    }

    private static byte[] body(int status) {
        ObjectNode n = JSON.createObjectNode();
        String reason = HttpStatus.getMessage(status);
        n.put("error", "the request was refused: " + (reason == null ? "HTTP " + status : reason));
        n.put("status", status);
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }
}
