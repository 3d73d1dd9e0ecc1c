package dev.layover.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Calls a console's API the way a script would: bearer token, operator header. */
final class ApiClient {

    static final ObjectMapper JSON = new ObjectMapper();

    /** A response: status, parsed JSON (or null), headers, raw body. */
    record Resp(int status, JsonNode json, HttpHeaders headers, String body) {
        String error() {
            return json == null ? body : json.path("error").asText();
        }
    }

    private final URI base;
    private final String token;
    private final HttpClient http = HttpClient.newBuilder()
            .followRedirects(HttpClient.Redirect.NEVER)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    ApiClient(ReplayConsole console) {
        this(console.url(), console.token());
    }

    ApiClient(URI base, String token) {
        this.base = base;
        this.token = token;
    }

    URI base() {
        return base;
    }

    HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(60));
    }

    HttpRequest.Builder authorized(String path) {
        return request(path).header("Authorization", "Bearer " + token).header("X-Layover-Operator", "alice");
    }

    Resp get(String path) {
        return send(authorized(path).GET());
    }

    Resp post(String path, String json) {
        return send(authorized(path).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)));
    }

    Resp send(HttpRequest.Builder b) {
        try {
            HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            JsonNode json = null;
            String ct = r.headers().firstValue("Content-Type").orElse("");
            if (ct.startsWith("application/json") && !r.body().isEmpty()) {
                json = JSON.readTree(r.body());
            }
            return new Resp(r.statusCode(), json, r.headers(), r.body());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static String enc(String s) {
        return java.net.URLEncoder.encode(s, java.nio.charset.StandardCharsets.UTF_8);
    }
}
