// Placeholder: tests are added here.
