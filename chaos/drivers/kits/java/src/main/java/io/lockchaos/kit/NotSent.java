package io.lockchaos.kit;

/**
 * Nothing reached Redis (no connection could be opened, no master was found): the operation
 * certainly did not happen, and the kit answers it {@code definite: true}. Throw it only then:
 * after a command was written, a failure is indeterminate, whatever the library says.
 */
public class NotSent extends Exception {
    private static final long serialVersionUID = 1L;

    public NotSent(String message) {
        super(message);
    }

    public NotSent(String message, Throwable cause) {
        super(message, cause);
    }
}
