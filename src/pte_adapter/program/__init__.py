"""The typed program: what a `.pte` holds, as plain dataclasses (`model`), the backend-neutral graph
every delegate decoder fills (`delegate_graph`), and the reader that builds them from the
container's bounds-checked views (`reader`); `cached`, a property computed once, which the layers
above use too."""
