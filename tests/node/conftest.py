import pytest
from nodecluster import Cluster


@pytest.fixture
async def cluster():
    c = Cluster()
    yield c
    await c.close()
