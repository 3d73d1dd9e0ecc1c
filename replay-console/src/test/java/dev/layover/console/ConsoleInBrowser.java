package dev.layover.console;

import dev.layover.core.Layover;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * What the console's browser tests share: a Layover, the console on it and a headless Chromium,
 * each set by the test that needs it and closed after every test (the browser first, the Layover
 * last). A test skips when Chromium is not installed.
 */
abstract class ConsoleInBrowser {

    protected Layover layover;
    protected ReplayConsole console;
    protected Browser browser;

    @BeforeEach
    void chromium() {
        Browser.requireChromium();
    }

    @AfterEach
    void closeBrowserConsoleAndLayover() throws Exception {
        if (browser != null) {
            browser.close();
        }
        if (console != null) {
            console.close();
        }
        if (layover != null) {
            layover.stop();
        }
    }
}
