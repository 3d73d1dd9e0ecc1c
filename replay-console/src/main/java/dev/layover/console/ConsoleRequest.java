package dev.layover.console;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One API request: its path parameters, query parameters, JSON body and operator. Every text it
 * hands out has passed {@link InputText#check}: a value the database cannot store is a 400 that
 * names it.
 */
final class ConsoleRequest {

    static final int MAX_BODY = 1024 * 1024;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServletRequest request;
    private final HttpServletResponse response;
    private final List<String> pathNames;
    private final List<String> pathParams;
    private final Map<String, List<String>> query;
    private final ConsoleSecurity.Auth auth;
    private final ConsoleOptions options;
    private JsonNode body;

    ConsoleRequest(HttpServletRequest request, HttpServletResponse response, List<String> pathNames,
            List<String> pathParams, ConsoleSecurity.Auth auth, ConsoleOptions options) {
        this.request = request;
        this.response = response;
        this.pathNames = pathNames;
        this.pathParams = pathParams;
        this.auth = auth;
        this.options = options;
        for (int i = 0; i < pathParams.size(); i++) {
            InputText.check(pathParams.get(i), pathNames.get(i));
        }
        this.query = parseQuery(request.getQueryString());
        query.forEach((k, vs) -> {
            InputText.check(k, "a query parameter name");
            vs.forEach(v -> InputText.check(v, k));
        });
    }

    HttpServletRequest request() {
        return request;
    }

    HttpServletResponse response() {
        return response;
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
        String type = request.getContentType();
        byte[] bytes = readBody();
        if (bytes.length == 0) {
            body = JsonNodeFactory.instance.objectNode();
            return body;
        }
        if (type == null || !type.toLowerCase(Locale.ROOT).startsWith("application/json")) {
            throw new ApiException(415, "send the request body as JSON (Content-Type: application/json)");
        }
        JsonNode n;
        try {
            n = JSON.readTree(bytes);
        } catch (JsonProcessingException e) {
            throw ApiException.badRequest("the request body is not valid JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw ApiException.badRequest("the request body could not be read: " + e.getMessage());
        }
        if (n == null || !n.isObject()) {
            throw ApiException.badRequest("the request body must be a JSON object");
        }
        InputText.check(n, "");
        body = n;
        return body;
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
     * @return with external authentication the application's user ({@code getRemoteUser()});
     *     else (or when it names none) the operator named by the operator header, or the default;
     *     400 when the header is not a usable name
     */
    String operator() {
        if (auth != null && auth.user() != null && !auth.user().isBlank()) {
            return checkedOperator(auth.user().strip(), "the application's user name");
        }
        String v = request.getHeader(options.operatorHeader());
        if (v == null || v.isBlank()) {
            return options.defaultOperator();
        }
        return checkedOperator(v.strip(), "the operator name (" + options.operatorHeader() + " header)");
    }

    private static String checkedOperator(String name, String what) {
        if (name.length() > 200) {
            throw ApiException.badRequest(what + " must be at most 200 characters");
        }
        for (int i = 0; i < name.length(); i++) {
            if (Character.isISOControl(name.charAt(i))) {
                throw ApiException.badRequest(what + " must not contain control characters");
            }
        }
        return InputText.check(name, "operator");
    }

    /**
     * Reads the body, at most {@link #MAX_BODY} bytes, within the read timeout: a client that
     * trickles its body is answered 408 (a single silent wait is bounded by the idle timeout).
     */
    private byte[] readBody() {
        long deadline = System.nanoTime() + options.readTimeout().toNanos();
        try (InputStream in = request.getInputStream()) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            int n;
            while ((n = in.read(buf)) >= 0) {
                out.write(buf, 0, n);
                if (out.size() > MAX_BODY) {
                    throw new ApiException(413, "the request body is larger than " + MAX_BODY + " bytes");
                }
                if (System.nanoTime() > deadline) {
                    response.setHeader("Connection", "close");
                    throw new ApiException(408, "the request body took longer than " + options.readTimeout().toSeconds()
                            + " s to arrive");
                }
            }
            return out.toByteArray();
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
