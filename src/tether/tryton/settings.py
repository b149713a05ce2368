"""The local Tryton's settings (prefix ``TETHER_TRYTON_``): where its database lives and where
``trytond`` listens."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class TrytonSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TETHER_TRYTON_", extra="ignore")

    data_dir: Path = Field(Path("./var/tryton"), description="the SQLite files and trytond's configuration")
    database: str = Field("tether_demo", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,62}$", description="the database's name")
    database_url: str | None = Field(
        None,
        description="a PostgreSQL server (postgresql://user:password@host:port/) to hold the database; unset: SQLite "
        "under data_dir",
    )
    host: str = Field("127.0.0.1", description="where trytond listens")
    port: int = Field(8720, ge=1, le=65535, description="trytond's port")

    @property
    def config_file(self) -> Path:
        return self.data_dir / "trytond.conf"

    @property
    def sqlite_file(self) -> Path | None:
        """The database's file on SQLite; None on PostgreSQL."""
        return None if self.database_url else self.data_dir / f"{self.database}.sqlite"

    @property
    def rpc_url(self) -> str:
        return f"http://{self.host}:{self.port}/{self.database}/"
