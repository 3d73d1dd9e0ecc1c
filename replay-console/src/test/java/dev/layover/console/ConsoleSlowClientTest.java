package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Slow clients cannot stall the console: twenty sockets that send part of their headers and then
 * trickle a byte at a time ("slowloris") do not keep a normal API call from answering, and are
 * disconnected once the header timeout passes; a body that trickles is answered 408.
 */
@DatabaseTest
class ConsoleSlowClientTest {

    private static final Duration GENEROUS = Duration.ofSeconds(20);

    private final List<Socket> sockets = new ArrayList<>();
    private final ScheduledExecutorService trickle = Executors.newSingleThreadScheduledExecutor();
    private Layover layover;
    private ReplayConsole console;

    @AfterEach
    void stop() throws IOException {
        trickle.shutdownNow();
        for (Socket s : sockets) {
            s.close();
        }
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }

    private Socket slowSocket(String head) throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), console.port());
        s.setSoTimeout((int) GENEROUS.toMillis());
        s.getOutputStream().write(head.getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        sockets.add(s);
        return s;
    }

    /** Sends one more byte on every socket still open, every 200 ms: never the end of the headers. */
    private void trickleEvery200ms() {
        trickle.scheduleAtFixedRate(() -> {
            for (Socket s : sockets) {
                try {
                    OutputStream out = s.getOutputStream();
                    out.write('x');
                    out.flush();
                } catch (IOException closed) {
                    // the console hung up on it: what the test waits for
                }
            }
        }, 200, 200, TimeUnit.MILLISECONDS);
    }

    /**
     * @return what the console sent before it closed the socket ({@code ""} after a reset), or
     *     {@code null} when it kept it open for the socket's whole read timeout
     */
    private static String closedByServer(Socket s) {
        StringBuilder sent = new StringBuilder();
        try {
            InputStream in = s.getInputStream();
            for (int b; (b = in.read()) >= 0;) {
                sent.append((char) b);
            }
            return sent.toString();
        } catch (SocketTimeoutException e) {
            return null;
        } catch (IOException reset) {
            return sent.toString();
        }
    }

    @Test
    void twentyHalfSentRequestsDoNotBlockANormalCallAndAreDisconnectedAfterTheHeaderTimeout(TestDatabase db)
            throws Exception {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, Fixtures.options().withThreads(2)
                .withHeaderTimeout(Duration.ofSeconds(2)).withIdleTimeout(Duration.ofSeconds(60)));
        for (int i = 0; i < 20; i++) {
            slowSocket("GET /api/overview HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + Fixtures.TOKEN
                    + "\r\nX-Slow: ");
        }
        trickleEvery200ms();

        ApiClient api = new ApiClient(console);
        long t0 = System.nanoTime();
        ApiClient.Resp r = api.send(api.authorized("/api/overview").timeout(GENEROUS).GET());
        assertEquals(200, r.status(), r.body());
        assertTrue(System.nanoTime() - t0 < GENEROUS.toNanos(), "answered while 20 slow clients hold connections");
        assertEquals(200, api.get("/api/session").status(), "and again");

        for (Socket s : sockets) {
            String sent = closedByServer(s);
            assertNotNull(sent, "a slow client is disconnected after the header timeout");
            assertTrue(sent.isEmpty() || sent.startsWith("HTTP/1.1 408 "), sent);
        }
        assertEquals(200, api.get("/api/session").status());
    }

    @Test
    void aBodyThatTricklesIsAnswered408(TestDatabase db) throws Exception {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        console = ReplayConsole.start(layover, Fixtures.options().withReadTimeout(Duration.ofSeconds(1)));
        long id = Fixtures.deadLetter("slow").insert(db);
        Socket s = slowSocket("POST /api/dead-letters/" + id + "/discard HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer " + Fixtures.TOKEN + "\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100000\r\n\r\n{\"note\": \"");
        trickleEvery200ms();
        String answer = new String(s.getInputStream().readNBytes(12), StandardCharsets.US_ASCII);
        assertEquals("HTTP/1.1 408", answer);
        assertNotNull(closedByServer(s), "the slow body's connection is closed");
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", id));
        ApiClient api = new ApiClient(console);
        assertEquals(200, api.send(api.authorized("/api/dead-letters/" + id + "/discard")
                .POST(HttpRequest.BodyPublishers.noBody())).status());
    }
}
