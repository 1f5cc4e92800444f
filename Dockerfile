FROM python:3.11-slim
WORKDIR /app
COPY . /app
# Exactly the pinned, hashed dependencies of the server (requirements/server.lock), then ragpg itself.
RUN pip install --no-cache-dir --require-hashes -r requirements/server.lock \
    && pip install --no-cache-dir --no-deps .
ENV LITELLM_LOCAL_MODEL_COST_MAP=True
EXPOSE 8000
CMD ["ragpg", "serve", "--host", "0.0.0.0", "--port", "8000"]
