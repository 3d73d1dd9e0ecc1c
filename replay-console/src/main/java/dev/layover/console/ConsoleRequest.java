package dev.layover.console;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** One API request: its path parameters, query parameters, JSON body and operator. */
final class ConsoleRequest {

    static final int MAX_BODY = 1024 * 1024;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpExchange exchange;
    private final List<String> pathParams;
    private final Map<String, List<String>> query;
    private final ConsoleSecurity.Auth auth;
    private final ConsoleOptions options;
    private JsonNode body;

    ConsoleRequest(HttpExchange exchange, List<String> pathParams, ConsoleSecurity.Auth auth, ConsoleOptions options) {
        this.exchange = exchange;
        this.pathParams = pathParams;
        this.query = parseQuery(exchange.getRequestURI().getRawQuery());
        this.auth = auth;
        this.options = options;
    }

    HttpExchange exchange() {
        return exchange;
    }

    ConsoleSecurity.Auth auth() {
        return auth;
    }

    /** @return the i-th path parameter, decoded */
    String path(int i) {
        return pathParams.get(i);
    }

    /** @return the i-th path parameter as a dead letter id, or 404 */
    long id(int i) {
        try {
            return Long.parseLong(pathParams.get(i));
        } catch (NumberFormatException e) {
            throw ApiException.notFound("no dead letter with id '" + pathParams.get(i) + "'");
        }
    }

    /** @return the first value of a query parameter, or {@code null} when absent or empty */
    String param(String name) {
        List<String> v = query.get(name);
        if (v == null) {
            return null;
        }
        for (String s : v) {
            if (!s.isEmpty()) {
                return s;
            }
        }
        return null;
    }

    /** @return every non-empty value of a repeatable query parameter */
    List<String> params(String name) {
        List<String> out = new ArrayList<>();
        for (String s : query.getOrDefault(name, List.of())) {
            if (!s.isEmpty()) {
                out.add(s);
            }
        }
        return out;
    }

    /** @return an integer query parameter within bounds, or the default */
    int intParam(String name, int dflt, int min, int max) {
        String v = param(name);
        if (v == null) {
            return dflt;
        }
        try {
            int n = Integer.parseInt(v.strip());
            if (n < min || n > max) {
                throw ApiException.badRequest(name + " must be " + min + "-" + max + ", was " + n, name);
            }
            return n;
        } catch (NumberFormatException e) {
            throw ApiException.badRequest(name + " must be a whole number, was '" + v + "'", name);
        }
    }

    /** @return the JSON body: an object, or an empty object when there is none */
    JsonNode body() {
        if (body != null) {
            return body;
        }
        String type = exchange.getRequestHeaders().getFirst("Content-Type");
        byte[] bytes = readBody();
        if (bytes.length == 0) {
            body = JsonNodeFactory.instance.objectNode();
            return body;
        }
        if (type == null || !type.toLowerCase(java.util.Locale.ROOT).startsWith("application/json")) {
            throw new ApiException(415, "send the request body as JSON (Content-Type: application/json)");
        }
        try {
            JsonNode n = JSON.readTree(bytes);
            if (n == null || !n.isObject()) {
                throw ApiException.badRequest("the request body must be a JSON object");
            }
            body = n;
            return body;
        } catch (JsonProcessingException e) {
            throw ApiException.badRequest("the request body is not valid JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw ApiException.badRequest("the request body could not be read: " + e.getMessage());
        }
    }

    /** @return a text field of the body, or {@code null} */
    String bodyText(String field, int maxLength) {
        JsonNode v = body().get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw ApiException.badRequest(field + " must be a string", field);
        }
        String s = v.asText();
        if (s.length() > maxLength) {
            throw ApiException.badRequest(field + " is longer than " + maxLength + " characters", field);
        }
        return s.isBlank() ? null : s;
    }

    /**
     * @return the operator named by the operator header, or the default; 400 when the header is
     *     not a usable name
     */
    String operator() {
        String v = exchange.getRequestHeaders().getFirst(options.operatorHeader());
        if (v == null || v.isBlank()) {
            return options.defaultOperator();
        }
        String name = v.strip();
        if (name.length() > 200) {
            throw ApiException.badRequest("the operator name (" + options.operatorHeader()
                    + " header) must be at most 200 characters");
        }
        for (int i = 0; i < name.length(); i++) {
            if (Character.isISOControl(name.charAt(i))) {
                throw ApiException.badRequest("the operator name (" + options.operatorHeader()
                        + " header) must not contain control characters");
            }
        }
        return name;
    }

    private byte[] readBody() {
        try (InputStream in = exchange.getRequestBody()) {
            byte[] buf = in.readNBytes(MAX_BODY + 1);
            if (buf.length > MAX_BODY) {
                throw new ApiException(413, "the request body is larger than " + MAX_BODY + " bytes");
            }
            return buf;
        } catch (IOException e) {
            throw ApiException.badRequest("the request body could not be read: " + e.getMessage());
        }
    }

    static Map<String, List<String>> parseQuery(String raw) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        for (String pair : raw.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String k = decode(eq < 0 ? pair : pair.substring(0, eq));
            String v = eq < 0 ? "" : decode(pair.substring(eq + 1));
            out.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
        }
        return out;
    }

    static String decode(String s) {
        try {
            return URLDecoder.decode(s, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("malformed URL encoding: " + e.getMessage());
        }
    }
}
